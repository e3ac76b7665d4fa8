#!/bin/sh
# jackin's entry wrapper, bind-mounted read-only at /jackin/bin/entry.
#
# Runs the agent ("$@") as the foreground process, so the terminal reaches
# it, then records how it ended in /jackin/state/exit.json, a completion
# marker that outlives the container (the state directory is the unit's on
# the host). The marker never holds a secret: names, times and an exit code.
#
# A signal (docker stop, Ctrl-C) reaches the agent through the init process,
# which forwards it to the whole process group; the traps below only note
# it, and run once the agent has exited, so the marker says why it ended.
state=/jackin/state
now() { date -u +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo ""; }
started=$(now)
reason=exited
trap 'reason=signal:TERM' TERM
trap 'reason=signal:INT' INT
trap 'reason=signal:HUP' HUP
"$@"
code=$?
finished=$(now)
printf '{"instance":"%s","container":"%s","exitCode":%d,"startedAt":"%s","finishedAt":"%s","reason":"%s"}\n' \
  "${JACKIN_INSTANCE:-}" "${JACKIN_CONTAINER:-}" "$code" "$started" "$finished" "$reason" \
  > "$state/.exit.json.tmp" && mv -f "$state/.exit.json.tmp" "$state/exit.json"
exit "$code"
