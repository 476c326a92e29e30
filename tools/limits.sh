#!/bin/sh
# limits.sh [HK] — hk against kernel files at and past the limits of size a
# user may reach (issue 12): a 10 MB kernel file, 10,000 kernels in one
# file, a 100,000-character body, JSON nested 100,000 deep, an object of
# 100,000 keys, a plugin folder of 2,000 files. For each: what hk says (an error where a limit is hit, in
# the form PATH:LINE:COL: error: ...), the exit status, the time and the
# peak memory (GNU time). Nothing here is a pass/fail test of speed: the
# figures go in the closing note and schemas/README.md §9.1. Growth is
# checked by running each case at two sizes: when the time grows more than
# 4x for 2x the input, the case is flagged QUADRATIC?.
# Needs /usr/bin/time and /usr/bin/python3 (to write the files).
set -u
cd "$(dirname "$0")/.."
HK=${1:-build/hk}
[ -x "$HK" ] || { echo "limits.sh: no $HK: build first (cmake --build build)"; exit 2; }
[ -x /usr/bin/time ] || { echo "limits.sh: /usr/bin/time is missing (apt-get install time)"; exit 2; }
[ -x /usr/bin/python3 ] || { echo "limits.sh: /usr/bin/python3 is missing"; exit 2; }
W=$(mktemp -d /root/hk-limits.XXXXXX 2>/dev/null || mktemp -d)
trap 'rm -rf "$W"' EXIT
chmod 755 "$W"
export HK_CACHE_DIR="$W/cache"

/usr/bin/python3 - "$W" <<'PY'
import json, os, sys
w = sys.argv[1]
def ew(name, body):
    return {"name": name, "kind": "elementwise",
            "params": [{"name": "x", "type": "f32", "role": "in"},
                       {"name": "y", "type": "f32", "role": "out"}],
            "body": body}
def write(path, obj):
    with open(os.path.join(w, path), "w") as f:
        json.dump(obj, f)
for scale, tag in ((1, "half"), (2, "full")):
    # 10,000 kernels in one file (5,000 at half size)
    n = 5000 * scale
    write(f"many_{tag}.json", {"schema_version": 1,
          "kernels": [ew(f"k{i}", "y = x + %d.0f;" % i) for i in range(n)]})
    # a 100,000-character body (50,000 at half size): one statement a line
    lines = []
    size = 0
    while size < 50000 * scale:
        s = "y = y + x * 0.5f;"
        lines.append(s)
        size += len(s) + 1
    write(f"body_{tag}.json", {"schema_version": 1,
          **ew("longbody", ["y = x;"] + lines)})
    # a 10 MB file (5 MB at half size): one kernel, its doc padded
    k = ew("big", "y = x;")
    k["schema_version"] = 1
    k["doc"] = "d" * (5 * 1000 * 1000 * scale)
    write(f"big_{tag}.json", k)
    # JSON nested 100,000 deep (50,000 at half size)
    d = 50000 * scale
    with open(os.path.join(w, f"deep_{tag}.json"), "w") as f:
        f.write('{"schema_version": 1, "name": "deep", "x": ' + "[" * d + "]" * d + "}")
    # an object of 100,000 keys (50,000 at half size): annotations
    k = ew("keys", "y = x;")
    k["schema_version"] = 1
    for i in range(50000 * scale):
        k["_c%d" % i] = i
    write(f"keys_{tag}.json", k)
    # a plugin folder of 2,000 files (1,000 at half size)
    folder = os.path.join(w, f"folder_{tag}")
    os.makedirs(folder)
    os.chmod(folder, 0o755)
    for i in range(1000 * scale):
        with open(os.path.join(folder, f"p{i}.json"), "w") as f:
            json.dump({"schema_version": 1, **ew(f"p{i}", "y = x * %d.0f;" % i)}, f)
PY

# run NAME ARGS...: one line: exit status, wall time, peak memory, the
# first line of stderr; the time alone goes to $W/secs.
run() {
  name=$1
  shift
  /usr/bin/time -f "TIME %e %M" -o "$W/t" "$@" >"$W/out" 2>"$W/err"
  rc=$?
  t=$(sed -n 's/^TIME \([0-9.]*\) .*/\1/p' "$W/t")
  m=$(sed -n 's/^TIME [0-9.]* \([0-9]*\)$/\1/p' "$W/t")
  printf '  %-32s exit %d %7.2f s %6d MB  %s\n' "$name" "$rc" "$t" \
    $((m / 1024)) "$(grep -v '^$' "$W/err" | head -1 | cut -c1-110)"
  echo "$t" >"$W/secs"
}
# grows NAME: flags a case whose time grew more than 4x for twice the input
grows() {
  awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN {
    if (a > 0.05 && b / a > 4)
      printf "  %s: QUADRATIC? %.2f s -> %.2f s for twice the input\n", n, a, b }'
}
echo "hk limits ($HK): exit status, wall time, peak memory, first line of stderr"
for c in many body big deep keys folder; do
  for tag in half full; do
    f="$W/${c}_$tag"
    [ -d "$f" ] || f="$f.json"
    run "hk check $(basename "$f")" "$HK" check "$f"
    eval "t_$tag=\$(cat \"\$W/secs\")"
  done
  # shellcheck disable=SC2154
  grows "$t_half" "$t_full" "$c"
done
# A folder loaded: every kernel compiled to tier opt (in batches) from a
# cold cache, then a warm start from the cache.
for tag in half full; do
  run "hk list folder_$tag (cold cache)" "$HK" list --plugins "$W/folder_$tag"
  run "hk list folder_$tag (warm cache)" "$HK" list --plugins "$W/folder_$tag"
done
