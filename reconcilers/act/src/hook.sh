#!/bin/sh
# jackin's idle-hook runner, bind-mounted read-only at /jackin/bin/hook.
# Usage: hook SECONDS PROGRAM [ARG…]
#
# Runs one idle command in its own session (so that everything it starts
# can be killed together), and kills that whole group once SECONDS have
# passed: a command that hangs is cut off, and nothing it spawned lingers
# in the agent's container. The command's exit code is this script's; a
# command cut off exits 137 after saying so on standard error.
#
# The watchdog is never killed: it looks once a second whether the command
# still runs and ends by itself when it does not. A watchdog killed from
# here would leave its `sleep` running, and the shell would report the kill
# ("Terminated") as the last line of output, in place of the command's.
limit=$1
shift
if command -v setsid >/dev/null 2>&1; then
  setsid "$@" &
else
  "$@" &
fi
pid=$!
(
  n=0
  while [ "$n" -lt "$limit" ]; do
    sleep 1
    # Reaped by the `wait` below once it ended: then there is no such process.
    kill -0 "$pid" 2>/dev/null || exit 0
    n=$((n + 1))
  done
  kill -KILL -"$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
  exit 1
) &
watchdog=$!
wait "$pid"
code=$?
# The watchdog fails only when it cut the command off.
if ! wait "$watchdog"; then
  echo "timed out after ${limit}s: killed" >&2
fi
exit "$code"
