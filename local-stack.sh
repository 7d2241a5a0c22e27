#!/usr/bin/env bash
# outbox-relay local stack: real PostgreSQL, Kafka (KRaft) and Kafka Connect as local processes.
# No Docker; needs Java 17+ and Maven. See docs/local-stack.md.
#
#   ./local-stack.sh [up]      build the plugin, start everything, run the demo; leaves it running
#   ./local-stack.sh --exactly-once   the same with exactly-once delivery (worker, connector, demo)
#   ./local-stack.sh status    what runs, connector state, headline metrics, outbox rows
#   ./local-stack.sh down      stop it (logs stay in .local-stack/logs)
#   ./local-stack.sh demo      the demo again, against the running stack
#   ./local-stack.sh help      all options (ports, your own PostgreSQL, --exactly-once, --no-demo, ...)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"

fail() {
  echo "local-stack: $*" >&2
  exit 1
}

require_java() {
  local java="java"
  if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
    java="$JAVA_HOME/bin/java"
  fi
  command -v "$java" >/dev/null 2>&1 \
    || fail "Java was not found. Install a JDK 17 or newer (e.g. 'apt-get install openjdk-17-jdk') or set JAVA_HOME."
  local version major
  version="$("$java" -version 2>&1 | awk -F'"' '/version/ {print $2; exit}')"
  major="${version%%.*}"
  if [[ "$major" == "1" ]]; then # 1.8.0_x style
    major="$(echo "$version" | cut -d. -f2)"
  fi
  if ! [[ "$major" =~ ^[0-9]+$ ]] || ((major < 17)); then
    fail "Java ${version:-of unknown version} found at $(command -v "$java"); Java 17 or newer is needed. Install a newer JDK or point JAVA_HOME at one."
  fi
  JAVA="$java"
}

require_maven() {
  command -v mvn >/dev/null 2>&1 \
    || fail "Maven was not found. Install Maven 3.8 or newer (e.g. 'apt-get install maven')."
}

build() {
  require_maven
  local color=()
  if [[ ! -t 1 ]]; then
    # Output to a file or a pipe: no colour codes. -Dstyle.color=never is Maven's switch; Maven 3.8.7
    # (as Debian ships it) still writes a reset code (ESC[0m) at exit unless Jansi is told not to.
    color=(-Dstyle.color=never)
    export MAVEN_OPTS="${MAVEN_OPTS:+$MAVEN_OPTS }-Djansi.noreset=true"
  fi
  echo "[build]    Building the plugin and the launcher: mvn -B -q -DskipTests package"
  echo "           (quiet while it works, about 10 s; the first run downloads about 240 MB of"
  echo "           dependencies into ~/.m2 and takes a few minutes) ..."
  local started=$SECONDS
  # MAVEN_ARGS lets you add e.g. -o for offline builds.
  # shellcheck disable=SC2086
  mvn -B -q "${color[@]+"${color[@]}"}" -DskipTests ${MAVEN_ARGS:-} package \
    || fail "the build failed (see the Maven output above)."
  echo "[build]    done in $((SECONDS - started)) s"
}

launcher_built() {
  [[ -f local-stack/target/launcher.classpath && -d local-stack/target/classes ]]
}

launcher() {
  "$JAVA" -cp "local-stack/target/classes:$(cat local-stack/target/launcher.classpath)" \
    dev.outboxrelay.localstack.LocalStack "$@"
}

# True when the stack these options name is up: the launcher's own check, far quicker than a build.
stack_running() {
  launcher_built && launcher running "$@" >/dev/null 2>&1
}

run_launcher() {
  exec "$JAVA" -cp "local-stack/target/classes:$(cat local-stack/target/launcher.classpath)" \
    dev.outboxrelay.localstack.LocalStack "$@"
}

command="${1:-up}"
[[ "$command" == -* ]] && command="up"
require_java

no_build=false
args=()
for arg in "$@"; do
  if [[ "$arg" == "--no-build" ]]; then no_build=true; else args+=("$arg"); fi
done
options=("${args[@]+"${args[@]}"}") # the arguments without the command
if [[ ${#args[@]} -gt 0 && "${args[0]}" != -* ]]; then options=("${args[@]:1}"); fi

case "$command" in
  up)
    if [[ "$no_build" == true ]]; then
      :
    elif stack_running "${options[@]+"${options[@]}"}"; then
      echo "[build]    skipped: the local stack is already running (./local-stack.sh down, then up, to rebuild)"
    else
      build
    fi
    ;;
  down | status | demo | running | help)
    launcher_built || build
    ;;
  *)
    fail "unknown command '$command' (use up, down, status, demo, running or help)"
    ;;
esac

run_launcher "${args[@]+"${args[@]}"}"
