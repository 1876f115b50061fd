#!/usr/bin/env bash
# The core S3 scenario of 12_s3.t against s3rver, a second S3 implementation
# we claim to work with (12 runs it against moto with IAM authentication).
S3_SERVER=s3rver exec bash "$(dirname "$0")/12_s3.t"
