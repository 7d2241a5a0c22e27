#!/usr/bin/env bash
# outbox-relay local stack: real PostgreSQL, Kafka (KRaft) and Kafka Connect as local processes.
# No Docker; needs Java 17+ and Maven. See docs/local-stack.md.
#
#   ./local-stack.sh [up]      build the plugin, start everything, run the demo; leaves it running
#   ./local-stack.sh --exactly-once   the same with exactly-once delivery (worker, connector, demo)
#   ./local-stack.sh status    what runs, connector state, headline metrics, outbox rows
#   ./local-stack.sh down      stop it (logs stay in .local-stack/logs)
#   ./local-stack.sh demo      the demo again, against the running stack
#   ./local-stack.sh help      all options (ports, your own PostgreSQL, --exactly-once, --no-demo, ...);
#                              also -h or --help: no Java, no build
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
  # The build compiles in Maven's JVM: a Java runtime alone (Debian's default-jre-headless, which
  # 'apt-get install maven' brings) passed the version check, and the build then died in a stack
  # trace. The runtime itself says whether it has the compiler: a javac beside it is no proof
  # through shims and wrappers (mise, eselect, macOS's /usr/bin stubs).
  local modules
  modules="$("$java" --list-modules 2>/dev/null || true)"
  if ! grep -q '^jdk\.compiler@' <<<"$modules"; then
    fail "Java $version at $(command -v "$java") is a runtime without a compiler (no jdk.compiler module); the build needs a JDK 17 or newer (e.g. 'apt-get install openjdk-17-jdk-headless'), or JAVA_HOME pointing at one."
  fi
  JAVA="$java"
}

require_maven() {
  command -v mvn >/dev/null 2>&1 \
    || fail "Maven was not found. Install Maven 3.8 or newer (e.g. 'apt-get install maven')."
}

# One build at a time in this checkout: a second first run started while the first still builds
# (quiet for minutes while Maven downloads) would build into the same target/ folders; the
# launcher's own lock is only taken after the build. A lock left by a killed run is taken over.
BUILD_LOCK="$ROOT/.local-stack-build.lock"

take_build_lock() {
  local attempt holder
  for attempt in 1 2; do
    if mkdir "$BUILD_LOCK" 2>/dev/null; then
      echo $$ >"$BUILD_LOCK/pid"
      trap 'rm -rf "$BUILD_LOCK"' EXIT
      return 0
    fi
    holder="$(cat "$BUILD_LOCK/pid" 2>/dev/null || true)"
    if [[ -n "$holder" ]] && kill -0 "$holder" 2>/dev/null; then
      fail "another ./local-stack.sh (pid $holder) is building in this checkout; run this again once it is done."
    fi
    rm -rf "$BUILD_LOCK" # left by a run that was killed
  done
  fail "could not take the build lock $BUILD_LOCK"
}

release_build_lock() {
  rm -rf "$BUILD_LOCK"
  trap - EXIT
}

build() {
  require_maven
  take_build_lock
  local color=()
  if [[ ! -t 1 ]]; then
    # Output to a file or a pipe: no colour codes. -Dstyle.color=never is Maven's switch; Maven 3.8.7
    # (as Debian ships it) still writes a reset code (ESC[0m) at exit unless Jansi is told not to.
    color=(-Dstyle.color=never)
    export MAVEN_OPTS="${MAVEN_OPTS:+$MAVEN_OPTS }-Djansi.noreset=true"
  fi
  echo "[build]    Building the plugin and the launcher: mvn -B -q -DskipTests package"
  echo "           (quiet while it works, about 10 s; the first run downloads about 300 MB of"
  echo "           dependencies into ~/.m2 and takes a few minutes) ..."
  local started=$SECONDS
  # MAVEN_ARGS lets you add e.g. -o for offline builds.
  # shellcheck disable=SC2086
  mvn -B -q "${color[@]+"${color[@]}"}" -DskipTests ${MAVEN_ARGS:-} package \
    || fail "the build failed (see the Maven output above).${BUILD_FAILURE_HINT:+ $BUILD_FAILURE_HINT}"
  release_build_lock
  echo "[build]    done in $((SECONDS - started)) s"
}

launcher_built() {
  [[ -f local-stack/target/launcher.classpath && -d local-stack/target/classes ]]
}

launcher() {
  "$JAVA" -cp "local-stack/target/classes:$(cat local-stack/target/launcher.classpath)" \
    dev.outboxrelay.localstack.LocalStack "$@"
}

# The state directory these options name: --state-dir=, else LOCAL_STACK_HOME, else .local-stack
# under --repo-root= or LOCAL_STACK_ROOT (else this checkout); a blank value counts as unset, as the
# launcher reads it.
state_dir() {
  local root="${LOCAL_STACK_ROOT:-}" state="${LOCAL_STACK_HOME:-}" arg
  for arg in "$@"; do
    case "$arg" in
      --state-dir=*) state="${arg#--state-dir=}" ;;
      --repo-root=*) root="${arg#--repo-root=}" ;;
    esac
  done
  [[ -n "${root//[[:space:]]/}" ]] || root="."
  [[ -n "${state//[[:space:]]/}" ]] || state="$root/.local-stack"
  printf '%s\n' "$state"
}

# True when the state directory these options name holds a pid file of a process the launcher
# started.
recorded_pids() {
  local state file
  state="$(state_dir "$@")"
  for file in "$state"/pids/*.pid; do
    [[ -e "$file" ]] && return 0
  done
  return 1
}

# True when the stack these options name is up: the launcher's own check, far quicker than a build.
stack_running() {
  launcher_built && launcher running "$@" >/dev/null 2>&1
}

run_launcher() {
  exec "$JAVA" -cp "local-stack/target/classes:$(cat local-stack/target/launcher.classpath)" \
    dev.outboxrelay.localstack.LocalStack "$@"
}

# The launcher's usage (StackOptions.USAGE; LocalStackScriptTest keeps the two the same), printed
# here so that help needs neither Java nor a build.
usage() {
  cat <<'EOF'
usage: ./local-stack.sh [up|down|status|demo|running|help] [options]

  up       build the plugin, start PostgreSQL, a Kafka broker and a Connect worker, register
           the connector and run the demo; the stack keeps running (default)
  down     stop the stack started by `up`
  status   show what runs, the connectors' states, their headline metrics and the outbox
           rows; exits 1 when a process is down, a connector or task FAILED, or
           the worker's REST API does not answer (still starting)
  demo     run only the demo: against the running local stack, or against the services
           the demo-only options name (used by docker/docker-compose.yml)
  running  exit with 0 when the local stack runs, 1 when not; prints nothing (for scripts)

options (most also as an environment variable):
  --jdbc-url=URL          LOCAL_STACK_JDBC_URL     use this PostgreSQL instead of the embedded one
  --db-user=NAME          LOCAL_STACK_DB_USER      its user (default postgres)
                          LOCAL_STACK_DB_PASSWORD  its password (environment only, never a flag)
                          (OUTBOX_JDBC_URL, OUTBOX_DB_USER, OUTBOX_DB_PASSWORD: deprecated
                          names of these three, still read in this release, with a warning;
                          the demo refuses a database named by OUTBOX_JDBC_URL)
  --ports=auto            LOCAL_STACK_PORTS    pick free ports instead of the defaults
  --pg-port=N             LOCAL_STACK_PG_PORT          (default 15432)
  --kafka-port=N          LOCAL_STACK_KAFKA_PORT       (default 9092)
  --controller-port=N     LOCAL_STACK_CONTROLLER_PORT  (default 9093)
  --connect-port=N        LOCAL_STACK_CONNECT_PORT     (default 8083)
  --metrics-port=N        LOCAL_STACK_METRICS_PORT     (default 9404; the worker's /metrics)
  --exactly-once          LOCAL_STACK_EXACTLY_ONCE=true
                          run exactly-once: the worker with exactly.once.source.support=
                          enabled, the connector with delivery.guarantee=exactly-once and
                          exactly.once.support=required, the demo reading read_committed
  --no-demo                                    start the services only
  --connector-config=FILE                      connector to register (config/local-connector.json)
  --no-build              (script only)        do not run mvn package first
  --state-dir=DIR         LOCAL_STACK_HOME     the stack's data, logs and record (default
                                               .local-stack in the checkout)
  --repo-root=DIR         LOCAL_STACK_ROOT     the checkout the launcher runs from (default the
                                               current directory; this script builds and runs
                                               its own: run the other checkout's script)
demo only (each defaults to the running local stack's):
  --bootstrap-servers=HOST:PORT  --connect-url=URL  --connector-jdbc-url=URL (as Connect sees it)
EOF
}

# -h or --help anywhere, or help as the command: the usage, and nothing else (as the launcher does).
for arg in "$@"; do
  case "$arg" in
    -h | --help)
      usage
      exit 0
      ;;
  esac
done
command="${1:-up}"
[[ "$command" == -* ]] && command="up"
if [[ "$command" == "help" ]]; then
  usage
  exit 0
fi
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
  down | running)
    # Without a build, nothing this checkout's launcher started can be running unless a pid file
    # says so: answer without building (a checkout after mvn clean, or one that does not compile).
    if ! launcher_built && ! recorded_pids "${options[@]+"${options[@]}"}"; then
      if [[ "$command" == "down" ]]; then
        echo "Nothing of the local stack runs."
        exit 0
      fi
      exit 1
    fi
    # A checkout that does not compile must not leave a running stack without a way to stop it.
    BUILD_FAILURE_HINT="The stack may still run: fix the build and run ./local-stack.sh $command again, or stop by hand the processes whose pids are in $(state_dir "${options[@]+"${options[@]}"}")/pids/ (check with ps that each is still the stack's first: a pid may have been reused)."
    launcher_built || build
    ;;
  status | demo)
    launcher_built || build
    ;;
  *)
    fail "unknown command '$command' (use up, down, status, demo, running or help)"
    ;;
esac

run_launcher "${args[@]+"${args[@]}"}"
