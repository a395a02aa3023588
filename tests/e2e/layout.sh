#!/usr/bin/env bash
# The layout rule of README's table: each folder includes only the folders
# its row allows (lower folders never include higher ones), so the flow
# common -> bitstream -> dsp / input / gpu / iqa -> encoder -> cli stays a
# graph without cycles.  One check per folder.
. "$(dirname "$0")/lib.bash"

declare -A allowed=(
    [common]=""
    [bitstream]="common"
    [dsp]="common bitstream"
    [input]="common"
    [gpu]="common dsp"   # the cpu backend searches with dsp/sad.h's SAD and block sums
    [iqa]="common"
    [encoder]="common bitstream dsp input gpu iqa encoder"
    [cli]="common bitstream dsp input gpu iqa encoder cli"
)
for dir in common bitstream dsp input gpu iqa encoder cli; do
    [ -d "$ROOT/$dir" ] || { fail "$dir" "folder missing"; continue; }
    bad=""
    for f in "$ROOT/$dir"/*.[ch] "$ROOT/$dir"/*.cu "$ROOT/$dir"/*.cl; do
        [ -f "$f" ] || continue
        for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_]*\)\/.*/\1/p' "$f" | sort -u); do
            [ "$inc" = "$dir" ] && continue
            case " ${allowed[$dir]} " in
                *" $inc "*) ;;
                *) bad="$bad ${f#"$ROOT/"}->$inc/" ;;
            esac
        done
    done
    check "$dir" "includes a folder its row does not allow:$bad" [ -z "$bad" ]
done
exit 0
