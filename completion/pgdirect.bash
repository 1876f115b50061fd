# pgdirect.bash - bash completion for pgdirect: commands, each command's
# options and the words some of them take, and backup ids.
#
# Commands and options are read from the binary being completed
# ("pgdirect --help", "pgdirect COMMAND --help"), so they are always those
# of the installed version; the answers are cached per shell. Backup ids
# come from "pgdirect list --json" against the repository the line names
# (--repo, --config and the --s3-* and --sftp-* options on it), else the configured one,
# quietly and with a time limit: an unreachable repository completes
# nothing rather than hanging or printing errors.

_PGDIRECT_LIST_TIMEOUT=5

# "pgdirect --help" -> command names
_pgdirect_commands() {
    "$1" --help 2>/dev/null | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p'
}

# "pgdirect COMMAND --help" -> "--name METAVAR" lines (METAVAR empty for a switch), cached
declare -gA _pgdirect_options_cache
_pgdirect_options() {
    local bin=$1 cmd=$2 key="$1 $2"
    if [ -z "${_pgdirect_options_cache[$key]+set}" ]; then
        # "--name METAVAR  help": one space before a metavar, the padding (two or more) after it;
        # a switch is followed by the padding at once
        _pgdirect_options_cache[$key]=$("$bin" "$cmd" --help 2>/dev/null | sed -n \
            -e 's/^  \(--[a-z0-9-]*\) \([^ ][^ ]*\) .*/\1 \2/p' \
            -e 't' -e 's/^  \(--[a-z0-9-]*\)  .*/\1/p')
    fi
    printf '%s\n' "${_pgdirect_options_cache[$key]}"
}

# The metavar of option $3 of command $2 ("" for a switch or an unknown option)
_pgdirect_metavar() {
    _pgdirect_options "$1" "$2" | while read -r name metavar; do
        if [ "$name" = "$3" ]; then
            printf '%s\n' "$metavar"
            break
        fi
    done
}

# Backup ids in the repository the command line names
_pgdirect_backup_ids() {
    local bin=$1 i w args=()
    for ((i = 2; i < ${#COMP_WORDS[@]}; i++)); do
        w=${COMP_WORDS[i]}
        case $w in
        --repo | --config | --s3-* | --sftp-*)
            if [ "${COMP_WORDS[i + 1]:-}" = "=" ]; then
                args+=("$w=${COMP_WORDS[i + 2]:-}")
            else
                args+=("$w" "${COMP_WORDS[i + 1]:-}")
            fi
            ;;
        --repo=* | --config=* | --s3-*=* | --sftp-*=*) args+=("$w") ;;
        esac
    done
    timeout "$_PGDIRECT_LIST_TIMEOUT" "$bin" list --json "${args[@]}" 2>/dev/null |
        sed -n 's/.*"id": "\([0-9]\{8\}T[0-9]\{6\}[FD]\)".*/\1/p'
}

# The words an option's value may be: its metavar's choices, files, directories or ids
_pgdirect_values() {
    local bin=$1 cmd=$2 opt=$3 cur=$4 metavar
    metavar=$(_pgdirect_metavar "$bin" "$cmd" "$opt")
    case $metavar in
    FILE) COMPREPLY=($(compgen -f -- "$cur")) ;;
    DIR) COMPREPLY=($(compgen -d -- "$cur")) ;;
    ID) COMPREPLY=($(compgen -W "$(_pgdirect_backup_ids "$bin")" -- "$cur")) ;;
    *\|*) # choices; an all-capitals word (N in N|auto) is a placeholder, not a value
        COMPREPLY=($(compgen -W "$(printf '%s\n' ${metavar//|/ } | grep -v '^[A-Z]*$')" -- "$cur"))
        ;;
    *) COMPREPLY=() ;;
    esac
}

_pgdirect() {
    local bin=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]} prev="" cmd opt metavar
    [ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD - 1]}
    COMPREPLY=()
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$(_pgdirect_commands "$bin") --help --version" -- "$cur"))
        return
    fi
    cmd=${COMP_WORDS[1]}
    # --option=value: bash splits at '=' (COMP_WORDBREAKS)
    if [ "$cur" = "=" ]; then
        _pgdirect_values "$bin" "$cmd" "$prev" ""
        return
    fi
    if [ "$prev" = "=" ] && [ "$COMP_CWORD" -ge 3 ]; then
        _pgdirect_values "$bin" "$cmd" "${COMP_WORDS[COMP_CWORD - 2]}" "$cur"
        return
    fi
    if [[ $prev == --* ]]; then
        metavar=$(_pgdirect_metavar "$bin" "$cmd" "$prev")
        if [ -n "$metavar" ]; then
            _pgdirect_values "$bin" "$cmd" "$prev" "$cur"
            return
        fi
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_pgdirect_options "$bin" "$cmd" | cut -d' ' -f1)" -- "$cur"))
        return
    fi
    case $cmd in
    restore | verify | drill | annotate)
        COMPREPLY=($(compgen -W "LATEST $(_pgdirect_backup_ids "$bin")" -- "$cur"))
        ;;
    wal-push)
        COMPREPLY=($(compgen -f -- "$cur"))
        ;;
    esac
}

complete -F _pgdirect pgdirect
