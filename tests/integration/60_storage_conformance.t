#!/usr/bin/env bash
# The storage conformance checks of lib_storage.sh, written once against the
# storage interface, run against every driver: a local directory, S3 on moto
# (Signature V4 checked), S3 on s3rver, and Azure Blob Storage on Azurite
# (Shared Key checked), and SFTP on the test's own sshd (host key checked).
# Each store must keep the repository's promises: whole
# objects or none, create-exclusive, complete listings over pages, a killed
# writer leaving nothing visible.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_s3.sh"
. "$(dirname "$0")/lib_azure.sh"
. "$(dirname "$0")/lib_sftp.sh"
. "$(dirname "$0")/lib_storage.sh"
setup_tmp
trap 's3_stop; azurite_stop; sftp_kill; cleanup_all' EXIT
s3_require_storage_tool

# ---- local ----
local_temps() { find "$T/local/$1" -name '*.tmp.*' 2>/dev/null | wc -l; }
SC_LIST_REQUESTS="" SC_TEMP_LEFT=local_temps SC_TEMP_SWEPT=yes
storage_conformance local "$T/local"

# ---- S3 on moto, then on s3rver ----
s3_lists() { grep -c "list-type=2" "$S3_LOG"; }
s3_uploads() {
    "$S3_PYTHON" -c 'import sys, boto3
r = boto3.client("s3").list_multipart_uploads(Bucket=sys.argv[1], Prefix=sys.argv[2])
print(len(r.get("Uploads", [])))' "$S3_BUCKET" "conf/$1/"
}
s3_start
SC_LIST_REQUESTS=s3_lists SC_TEMP_LEFT=s3_uploads SC_TEMP_SWEPT=yes
storage_conformance "S3 (moto)" "s3://$S3_BUCKET/conf"
s3_stop

S3_SERVER=s3rver
s3_start
# what s3rver 3.7.1 does not do, found by these checks; each is checked on moto above
SC_LIST_REQUESTS=s3_lists SC_TEMP_LEFT="" SC_LACKS="empty no-replace sweep"
SC_LACKS_WHY="s3rver 3.7.1: a ranged GET of an empty object is cut short, If-None-Match is ignored, ListMultipartUploads is 501"
storage_conformance "S3 (s3rver)" "s3://$S3_BUCKET/conf"
s3_stop
SC_LACKS="" SC_LACKS_WHY=""

# ---- Azure on Azurite ----
az_lists() { azurite_requests "comp=list"; }
az_uncommitted() { azurite_admin uncommitted "$AZ_CONTAINER" "conf/$1/" | wc -l; }
azurite_start
SC_LIST_REQUESTS=az_lists SC_TEMP_LEFT=az_uncommitted SC_TEMP_SWEPT=no
storage_conformance "Azure (Azurite)" "azure://$AZ_CONTAINER/conf" --azure-endpoint "$PGDIRECT_AZURE_ENDPOINT"
azurite_stop

# ---- SFTP on sshd ----
sftp_temps() { find "$T/sftprepo/conf/$1" -name '*.tmp.*' 2>/dev/null | wc -l; }
sftp_start
SC_LIST_REQUESTS="" SC_TEMP_LEFT=sftp_temps SC_TEMP_SWEPT=yes
storage_conformance "SFTP (sshd)" "$SFTP_URI/conf" "${SFTP_OPTS[@]}"
sftp_stop

done_testing
