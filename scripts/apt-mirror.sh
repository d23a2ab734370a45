#!/bin/sh
# Prints the Debian package mirror this machine's apt is configured with: the first `deb` URI
# (not a -security or -updates suite) in /etc/apt/sources.list, /etc/apt/sources.list.d/*.list
# (one-line format) or /etc/apt/sources.list.d/*.sources (deb822 format). No host is built in:
# with no such entry it fails, naming the files it read. $OPREG_DEBIAN_MIRROR overrides it.
# Usage: apt-mirror.sh [ROOT]   (ROOT, default /, is where etc/apt is looked for; for tests)
set -eu
if [ -n "${OPREG_DEBIAN_MIRROR:-}" ]; then
    echo "$OPREG_DEBIAN_MIRROR"
    exit 0
fi
apt="${1:-}/etc/apt"
found=$(
    {
        for f in "$apt/sources.list" "$apt"/sources.list.d/*.list; do
            [ -f "$f" ] || continue
            # deb [options] URI SUITE COMPONENT...
            sed -n 's/^[[:space:]]*deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]*\)\{0,1\}\([^[:space:]]*\)[[:space:]]\{1,\}\([^[:space:]]*\).*/\2 \3/p' "$f"
        done
        for f in "$apt"/sources.list.d/*.sources; do
            [ -f "$f" ] || continue
            # deb822 stanzas: Types, URIs and Suites; Enabled: no skips a stanza.
            awk '
                function flush() {
                    if (types ~ /(^| )deb( |$)/ && enabled != "no" && uris != "")
                        print uris, suites
                    types = ""; uris = ""; suites = ""; enabled = ""
                }
                /^[[:space:]]*$/ { flush(); next }
                /^#/ { next }
                tolower($1) == "types:" { $1 = ""; types = substr($0, 2) }
                tolower($1) == "uris:" { uris = $2 }
                tolower($1) == "suites:" { suites = $2 }
                tolower($1) == "enabled:" { enabled = tolower($2) }
                END { flush() }
            ' "$f"
        done
    } | awk '$2 !~ /-(security|updates|backports)$/ && $2 !~ /\/updates$/ { print $1; exit }'
)
if [ -z "$found" ]; then
    echo "apt-mirror.sh: no Debian 'deb' source in $apt/sources.list or $apt/sources.list.d/; set OPREG_DEBIAN_MIRROR" >&2
    exit 1
fi
echo "$found"
