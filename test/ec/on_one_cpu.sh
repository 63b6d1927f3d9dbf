#!/bin/sh
# on_one_cpu.sh COMMAND [ARGS...] — runs COMMAND with every thread it starts on one CPU:
# the first this process may use (CPU 0 may not be among them in a container).
set -e
cpus=$(taskset -pc $$ | sed 's/.*: *//')
first=${cpus%%[,-]*}
exec taskset -c "$first" "$@"
