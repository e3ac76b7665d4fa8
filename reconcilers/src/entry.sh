#!/bin/sh
# jackin's entry wrapper, bind-mounted read-only at /jackin/bin/entry.
#
# Runs the agent ("$@") as the foreground process, so the terminal reaches
# it, then records how it ended in /jackin/state/exit.json, a completion
# marker that outlives the container (the state directory is the unit's on
# the host). The marker never holds a secret: names, times and an exit code.
#
# Who ended the session is recorded, not guessed from the exit code. A stop
# from outside (jackin keeping the session, docker stop, an engine shutting
# down: SIGTERM; a hangup) reaches the agent through the init, which signals
# the whole process group, so the wrapper sees it too. The traps only note it
# (they run after the agent exits), and then the marker says `signal:TERM`
# whatever the agent's exit code: many agents trap SIGTERM and exit 0, and
# that is still not the agent ending its session. Ctrl-C is the agent's to
# handle: the wrapper must survive it (a no-op trap, not an ignore, which the
# agent would inherit) and it never marks the session as stopped.
state=/jackin/state
now() { date -u +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo ""; }
started=$(now)
stopped=
trap 'stopped=TERM' TERM
trap 'stopped=HUP' HUP
trap ':' INT
"$@"
code=$?
finished=$(now)
reason=exited
[ -z "$stopped" ] || reason=signal:$stopped
printf '{"instance":"%s","container":"%s","exitCode":%d,"startedAt":"%s","finishedAt":"%s","reason":"%s"}\n' \
  "${JACKIN_INSTANCE:-}" "${JACKIN_CONTAINER:-}" "$code" "$started" "$finished" "$reason" \
  > "$state/.exit.json.tmp" && mv -f "$state/.exit.json.tmp" "$state/exit.json"
exit "$code"
