#!/bin/sh
n=$(ls "$DIAG_LOGS" | wc -l)
export RUST_LOG=warn,patchwise::research::extractive=debug
exec "$DIAG_BIN" --log-file "$DIAG_LOGS/$(printf %03d $n).log" "$@"
