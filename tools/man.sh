#!/bin/sh
# man.sh PROGRAM: a man page (roff, man(7) macros) made from PROGRAM --help,
# so the page never disagrees with the program.  The help's shape: a first
# line "NAME VERSION: summary", "usage:" lines, paragraphs, and entries
# "  -x, --long ARG   text" (or "  word ARG   text") whose text continues
# on lines indented past the entry's column.
set -e
prog=$1
name=$(basename "$prog")
"$prog" --help | awk -v name="$name" -v date="$(date -u +%Y-%m-%d)" '
function esc(s) {
    gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s)
    if (s ~ /^[.\047]/) s = "\\&" s
    return s
}
NR == 1 {
    version = $2; sub(/:$/, "", version)
    summary = $0; sub(/^[^:]*: */, "", summary)
    printf ".TH %s 1 \"%s\" \"%s %s\" \"User Commands\"\n", toupper(name), date, name, version
    printf ".SH NAME\n%s \\- %s\n", esc(name), esc(summary)
    next
}
/^usage:/ { sub(/^usage: */, ""); printf ".SH SYNOPSIS\n.nf\n%s\n", esc($0); syn = 1; next }
syn && /^ +[^ -]/ && !/^  [^ ]/ { sub(/^ +/, ""); printf "%s\n", esc($0); next }
syn { printf ".fi\n.SH DESCRIPTION\n"; syn = 0 }
/^$/ { if (NR > 2) printf ".PP\n"; entry = 0; next }
/^[A-Z][A-Za-z ]*: / {
    term = $0; sub(/:.*/, "", term); text = $0; sub(/^[^:]*: */, "", text)
    printf ".TP\n.B %s\n%s\n", esc(term), esc(text); entry = 1; next
}
/^  +[^ ].*  [^ ]/ && !(entry && match($0, /^ +/) && RLENGTH > 8) {
    line = $0; sub(/^ +/, "", line)
    split(line, parts, /  +/)
    term = parts[1]; text = substr(line, length(term) + 1); sub(/^ +/, "", text)
    printf ".TP\n.B %s\n%s\n", esc(term), esc(text); entry = 1; next
}
entry && /^ +/ { line = $0; sub(/^ +/, "", line); printf "%s\n", esc(line); next }
{ entry = 0; printf "%s\n", esc($0) }
END { if (syn) printf ".fi\n"; printf ".SH SEE ALSO\nThe README of the mpegenc sources.\n" }'
