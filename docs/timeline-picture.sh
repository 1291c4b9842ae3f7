#!/usr/bin/env bash
# Draws examples/app.timeline with `rulec simulate --html` and photographs the page in headless
# chromium: `docs/timeline-picture.sh RULEC OUT.png`. .ci/run runs it and compares the picture's
# size with docs/timeline.png (the README's), which was made by this script.
set -euo pipefail
rulec=$1 out=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$(dirname "$0")/.."
"$rulec" simulate --html "$work/app.html" examples/app.rules examples/app.timeline > /dev/null
# The window fits the drawing: its width and height are the svg's, plus the page's margins.
read -r width height < <(grep -o '<svg id="timeline"[^>]*' "$work/app.html" \
  | sed -E 's/.* width="([0-9]+)[^"]*" height="([0-9]+)[^"]*".*/\1 \2/')
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/profile" \
  --window-size="$((width + 24)),$((height + 48))" --screenshot="$work/app.png" "file://$work/app.html" \
  > /dev/null 2>&1
mv "$work/app.png" "$out"
