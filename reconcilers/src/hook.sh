#!/bin/sh
# jackin's idle-hook runner, bind-mounted read-only at /jackin/bin/hook.
# Usage: hook SECONDS PROGRAM [ARG…]
#
# Runs one idle command in its own session (so that everything it starts
# can be killed together), and kills that whole group once SECONDS have
# passed: a command that hangs is cut off, and nothing it spawned lingers
# in the agent's container. The command's exit code is this script's; a
# command cut off exits 137 after saying so on standard error.
limit=$1
shift
if command -v setsid >/dev/null 2>&1; then
  setsid "$@" &
else
  "$@" &
fi
pid=$!
(
  sleep "$limit"
  kill -KILL -"$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
) &
watchdog=$!
wait "$pid"
code=$?
# The watchdog ends on its own (status 0) only when it killed the command.
kill "$watchdog" 2>/dev/null
if wait "$watchdog"; then
  echo "timed out after ${limit}s: killed" >&2
fi
exit "$code"
