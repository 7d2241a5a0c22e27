#!/usr/bin/env bash
# Before and after, measured the only way this machine kind allows: the benchmarks of two builds run
# in alternating invocations, pair by pair in alternating order (A B, B A, A B, ...), each a fresh
# JVM with its own broker, worker and PostgreSQL, so that drift in the machine's load and the
# position within a pair hit both builds alike. Drains spread by ±15 % between invocations of one
# build on 2 cores (docs/benchmarks.md), so one invocation per build says little.
#
#   benchmark/compare.sh [-n PAIRS] REV_A REV_B [benchmark flags...]
#
# REV_A and REV_B are git revisions; WORKTREE is the working tree with its uncommitted changes
# (new files too, but for those .gitignore names). Every flag after them goes to both benchmarks, e.g.
#
#   benchmark/compare.sh HEAD WORKTREE --scenarios database,drain --tasks 2 --runs 3
#
# Each build's benchmark is built from a clean export of its revision (Maven flags from
# MVN_FLAGS, default "-B -q -Dstyle.color=never"); reports go to benchmark/target/compare/<time>/<n>-<A|B>/ and the
# summary below to summary.md beside them: each build's "Machine and settings" and any difference,
# every failed invocation (the script then exits 1). Run nothing else heavy meanwhile.
set -euo pipefail

pairs=2
if [[ "${1:-}" == "-n" ]]; then
  pairs=$2
  shift 2
fi
if [[ $# -lt 2 ]]; then
  sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
rev_a=$1
rev_b=$2
shift 2

root=$(git rev-parse --show-toplevel)
work="$root/benchmark/target/compare/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$work"

# A revision's tree: WORKTREE becomes a tree object of the working tree's files as they are,
# written through a copy of the index (git stash create left out new files, and built HEAD when
# they were the only change, reported as WORKTREE all the same).
tree_of() {
  if [[ "$1" == "WORKTREE" ]]; then
    local index
    index=$(mktemp)
    (cd "$root" && cp "$(git rev-parse --git-path index)" "$index" \
      && GIT_INDEX_FILE="$index" git add -A && GIT_INDEX_FILE="$index" git write-tree)
    rm -f "$index"
  else
    git -C "$root" rev-parse --verify "$1^{commit}"
  fi
}

build() { # label revision
  local label=$1 commit
  commit=$(tree_of "$2")
  if [[ -z "$commit" ]]; then
    echo "could not resolve $2 to a tree" >&2
    exit 1
  fi
  echo "building $label = $2 ($commit)"
  echo "- $label: $2 = $commit" >> "$work/builds.md"
  if [[ "$2" == "WORKTREE" ]]; then
    # New files go into the build (and into .git/objects): name them, so a stray one is seen.
    git -C "$root" ls-files -o --exclude-standard | sed 's/^/  new file in WORKTREE: /'
    git -C "$root" ls-files -o --exclude-standard | sed 's/^/  - new file: /' >> "$work/builds.md"
  fi
  mkdir -p "$work/src-$label" "$work/jar-$label"
  git -C "$root" archive "$commit" | tar -x -C "$work/src-$label"
  (cd "$work/src-$label" && mvn ${MVN_FLAGS:--B -q -Dstyle.color=never} -pl benchmark -am package -DskipTests)
  cp -r "$work/src-$label/benchmark/target/outbox-relay-benchmark.jar" \
    "$work/src-$label/benchmark/target/lib" "$work/jar-$label/"
  if [[ -d "$work/src-$label/benchmark/target/debezium-plugin" ]]; then
    cp -r "$work/src-$label/benchmark/target/debezium-plugin" "$work/jar-$label/"
  fi
}

build A "$rev_a"
build B "$rev_b"

# The pair's order alternates (A B, B A, ...): the second of a pair is not always the same build.
order() { # pair number
  if (($1 % 2 == 1)); then echo A B; else echo B A; fi
}

failed=()
for ((i = 1; i <= pairs; i++)); do
  for label in $(order "$i"); do
    out="$work/$i-$label"
    echo "invocation $i-$label started $(date +%T)"
    if ! (cd "$work/jar-$label" && java -jar outbox-relay-benchmark.jar "$@" --output "$out" \
      > "$out.log" 2>&1); then
      echo "invocation $i-$label failed: see $out.log"
      failed+=("invocation $i (build $label) FAILED, see $out.log")
    fi
  done
done

# A report's "## Machine and settings" section, without its heading.
settings() { # report
  awk '/^## / { on = ($0 ~ /^## Machine and settings/); next } on && NF' "$1"
}
first_report() { # invocation directory
  ls "$1"/report-*.md 2>/dev/null | head -1 || true
}

# One line per configuration and invocation: rows/s (median and min–max of the invocation's runs),
# then the cost columns where the report has them (older builds' reports have no cost table); then
# the latency table where the invocation ran latency.
{
  echo "# $rev_a (A) vs $rev_b (B), $pairs alternating pairs (A B, B A, ...), flags: $*"
  echo
  echo "Builds (commit, or for WORKTREE the tree it was built from):"
  echo
  cat "$work/builds.md"
  echo
  for line in ${failed[@]+"${failed[@]}"}; do
    echo "- $line"
  done
  ((${#failed[@]} == 0)) || echo
  # Each build's settings as its first report gives them, then what differs: B from A, and any
  # invocation from its build's first.
  echo "## Machine and settings"
  echo
  ref_A=""
  ref_B=""
  for ((i = 1; i <= pairs; i++)); do
    for label in $(order "$i"); do
      report=$(first_report "$work/$i-$label")
      [[ -n "$report" ]] || continue
      ref=ref_$label
      if [[ -z "${!ref}" ]]; then
        printf -v "$ref" '%s' "$report"
      elif ! diff -q <(settings "${!ref}") <(settings "$report") > /dev/null; then
        echo "invocation $i-$label differs from its build's first report:"
        echo
        echo '```diff'
        diff -u --label "${!ref#"$work"/}" --label "${report#"$work"/}" \
          <(settings "${!ref}") <(settings "$report") || true
        echo '```'
        echo
      fi
    done
  done
  for label in A B; do
    ref=ref_$label
    [[ -n "${!ref}" ]] || continue
    if [[ $label == B && -n "$ref_A" ]] \
      && diff -q <(settings "$ref_A") <(settings "$ref_B") > /dev/null; then
      echo "B: the same as A."
      echo
      continue
    fi
    echo "$label (${!ref#"$work"/}):"
    echo
    settings "${!ref}"
    echo
  done
  if [[ -n "$ref_A" && -n "$ref_B" ]] \
    && ! diff -q <(settings "$ref_A") <(settings "$ref_B") > /dev/null; then
    echo "A and B differ:"
    echo
    echo '```diff'
    diff -u --label A --label B <(settings "$ref_A") <(settings "$ref_B") || true
    echo '```'
    echo
  fi
  for ((i = 1; i <= pairs; i++)); do
    for label in $(order "$i"); do
      report=$(first_report "$work/$i-$label")
      if [[ -z "$report" ]]; then
        echo "## invocation $i-$label: no report, see $work/$i-$label.log"
        echo
        continue
      fi
      echo "## invocation $i-$label"
      echo
      echo "| configuration | rows/s, median (min–max) | WAL B/row insert / relay | CPU µs/row PostgreSQL / JVM |"
      echo "|---|---:|---:|---:|"
      awk -F'|' '
        /^## / { section = $0 }
        /^###/ { section = "" }
        section ~ /Throughput/ && /^\| [a-zA-Z]/ && $2 !~ /configuration/ { order[++n] = $2; rate[$2] = $4 }
        section ~ /Cost per row/ && /^\| [a-zA-Z]/ && $2 !~ /configuration/ {
          gsub(/ /, "", $4); gsub(/ /, "", $5); wal[$2] = $4 " / " $5; cpu[$2] = $10
        }
        END {
          for (k = 1; k <= n; k++) {
            c = order[k]
            printf "|%s|%s| %s |%s|\n", c, rate[c], (c in wal) ? wal[c] : "–", (c in cpu) ? cpu[c] : " – "
          }
        }' "$report"
      echo
      # Latency runs, where the invocation had them: the report's own table, columns as it names
      # them (older builds' reports have fewer).
      awk '/^## Commit-to-consumer/ { on = 1; next } /^## / { on = 0 } on && /^\|/' "$report"
      echo
    done
  done
} > "$work/summary.md"
cat "$work/summary.md"
if ((${#failed[@]} > 0)); then
  echo "${#failed[@]} invocation(s) failed: their builds' figures are missing from the summary" >&2
  exit 1
fi
