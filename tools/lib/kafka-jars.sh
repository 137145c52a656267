# shellcheck shell=bash
# Shared helper (sourced by tools/setup and tools/kafka-local): fetches the Apache Kafka
# broker jars (kafka_2.13 and its runtime dependencies, plus an SLF4J binding) from Maven
# Central with mvn into ${MOONCAKE_CACHE:-$HOME/.cache/mooncake}/kafka-<version>/libs/.
#
# Callers run with `set -euo pipefail`. Public functions:
#   kafka_jars_dir          print the libs directory for MOONCAKE_KAFKA_VERSION
#   kafka_jars_present      exit 0 if the libs directory is complete
#   kafka_jars_ensure       fetch the jars unless present (safe to run concurrently);
#                           maven's output goes to stderr only on failure
#   kafka_java              print the java binary to use ($JAVA_HOME/bin/java or java)

# Newest 3.9.x on Maven Central when this was written; override to try another.
: "${MOONCAKE_KAFKA_VERSION:=3.9.2}"
# Kafka 3.9 logs through slf4j-api 1.7.36 (from kafka-clients); bind it to reload4j as the
# Kafka distribution does, so the broker writes a readable log.
MOONCAKE_SLF4J_VERSION=1.7.36
MOONCAKE_RELOAD4J_VERSION=1.2.25
# maven-dependency-plugin pinned so the build does not depend on Maven's default.
MOONCAKE_MVN_DEP_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1

kafka_cache_root() {
  printf '%s\n' "${MOONCAKE_CACHE:-${HOME:-/root}/.cache/mooncake}"
}

kafka_jars_dir() {
  printf '%s/kafka-%s/libs\n' "$(kafka_cache_root)" "$MOONCAKE_KAFKA_VERSION"
}

kafka_java() {
  if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
    printf '%s\n' "$JAVA_HOME/bin/java"
  else
    printf 'java\n'
  fi
}

kafka_jars_present() {
  local libs
  libs="$(kafka_jars_dir)"
  [[ -f "$libs/.complete" && -f "$libs/kafka_2.13-$MOONCAKE_KAFKA_VERSION.jar" ]]
}

# Writes the throwaway pom whose runtime dependencies are the broker's classpath.
_kafka_jars_write_pom() {
  cat >"$1/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>mooncake.tools</groupId>
  <artifactId>kafka-broker-libs</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>$MOONCAKE_KAFKA_VERSION</version>
    </dependency>
    <dependency>
      <groupId>org.slf4j</groupId>
      <artifactId>slf4j-reload4j</artifactId>
      <version>$MOONCAKE_SLF4J_VERSION</version>
    </dependency>
    <dependency>
      <groupId>ch.qos.reload4j</groupId>
      <artifactId>reload4j</artifactId>
      <version>$MOONCAKE_RELOAD4J_VERSION</version>
    </dependency>
  </dependencies>
</project>
EOF
}

# Fetches into a temporary directory, checks it, then renames it into place, under a
# lock so that two concurrent callers (e.g. parallel kafka-local starts) fetch once.
kafka_jars_ensure() {
  kafka_jars_present && return 0

  local root libs lock work rc=0
  root="$(kafka_cache_root)/kafka-$MOONCAKE_KAFKA_VERSION"
  libs="$root/libs"
  lock="$root.lock"
  mkdir -p "$root" || { echo "error: cannot create $root" >&2; return 1; }
  if ! command -v mvn >/dev/null 2>&1; then
    echo "error: mvn not found: run tools/setup (or apt-get install maven)" >&2
    return 1
  fi
  if ! command -v "$(kafka_java)" >/dev/null 2>&1; then
    echo "error: java not found: run tools/setup (or apt-get install default-jdk-headless)" >&2
    return 1
  fi

  exec {_kafka_lock_fd}>"$lock"
  flock "$_kafka_lock_fd"
  if kafka_jars_present; then # fetched by another process while we waited
    exec {_kafka_lock_fd}>&-
    return 0
  fi

  if ! work="$(mktemp -d "$root/fetch.XXXXXX")" || ! _kafka_jars_write_pom "$work"; then
    echo "error: cannot write a temporary pom under $root" >&2
    exec {_kafka_lock_fd}>&-
    return 1
  fi
  if ! mvn -B -q -Dstyle.color=never -f "$work/pom.xml" \
    "$MOONCAKE_MVN_DEP_PLUGIN:copy-dependencies" \
    -DincludeScope=runtime -DoutputDirectory="$work/libs" >"$work/mvn.log" 2>&1; then
    echo "error: maven could not fetch the Kafka $MOONCAKE_KAFKA_VERSION jars; its output:" >&2
    tail -n 40 "$work/mvn.log" | sed 's/\x1b\[[0-9;]*m//g' >&2
    rc=1
  elif [[ ! -f "$work/libs/kafka_2.13-$MOONCAKE_KAFKA_VERSION.jar" ||
    ! -f "$work/libs/slf4j-api-$MOONCAKE_SLF4J_VERSION.jar" ||
    ! -f "$work/libs/slf4j-reload4j-$MOONCAKE_SLF4J_VERSION.jar" ]]; then
    echo "error: Kafka jars incomplete in $work/libs (expected kafka_2.13-$MOONCAKE_KAFKA_VERSION," \
      "slf4j-api/slf4j-reload4j-$MOONCAKE_SLF4J_VERSION)" >&2
    ls "$work/libs" >&2 || true
    rc=1
  elif ! "$(kafka_java)" -cp "$work/libs/*" kafka.tools.StorageTool random-uuid \
    >"$work/check.log" 2>&1; then
    echo "error: the fetched classpath cannot run kafka.tools.StorageTool:" >&2
    tail -n 20 "$work/check.log" >&2
    rc=1
  else
    find "$work/libs" -name '*.jar' | wc -l >"$work/libs/.complete"
    rm -rf "$libs"
    mv "$work/libs" "$libs"
  fi
  rm -rf "$work"
  exec {_kafka_lock_fd}>&-
  return "$rc"
}
