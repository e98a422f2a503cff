#!/usr/bin/env bash
# The remote pairings moved into interop/run.sh (run by CI, with the stdio ones); kept as a way in.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../../../interop/run.sh" "$@"
