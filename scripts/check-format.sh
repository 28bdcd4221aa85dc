#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Checks that every C source and header in the tree is formatted by the
# checked-in .clang-format (clang-format-14, Debian's). Prints each file that
# differs and how to fix it; exit 1 if any does. `--fix` reformats them.
# Each also begins with the project's SPDX line (see LICENSE).
set -eu
cd "$(dirname "$0")/.."
cf=${CLANG_FORMAT:-clang-format-14}
if ! command -v "$cf" >/dev/null 2>&1; then
    echo "check-format: $cf not found (scripts/install-deps.sh --all installs clang-format-14)" >&2
    exit 1
fi
bad=0
spdx='/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */'
for f in $(git ls-files '*.c' '*.h' | grep -v '^tests/data/'); do
    if [ "$(head -n 1 "$f")" != "$spdx" ]; then
        echo "check-format: $f does not begin with the line: $spdx" >&2
        bad=1
    fi
    if [ "${1:-}" = "--fix" ]; then
        "$cf" -i "$f"
    elif ! "$cf" "$f" | cmp -s - "$f"; then
        echo "check-format: $f is not formatted (run scripts/check-format.sh --fix)" >&2
        bad=1
    fi
done
exit $bad
