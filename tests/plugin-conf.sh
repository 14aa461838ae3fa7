# Shared by the plugin tests: a target config with a 64M writable export (disk0) and an 8M
# read-only one (ro), written to $T/target.conf.  Sourced after lib.sh.
# shellcheck shell=bash
write_target_conf() {
    local size=${1:-64M}
    truncate -s 8M "$T/ro.img"
    target_conf "$T/target.conf" port=10810 queue-depth=64 max-io=1M <<EOF
[export disk0]
path = $T/disk0.img
size = $size
description = rdmablk test disk
[export ro]
path = $T/ro.img
size = 8M
read-only = yes
EOF
}
PLUGIN=$BUILD/nbdkit-rdma-plugin.so
IO=$BUILD/tests/rdmablk-io
