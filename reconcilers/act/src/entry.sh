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
#
# Which argv runs is chosen here, at every start of the container (a
# `docker start` runs this script again with the argv fixed at creation),
# from the start plan jackin writes before each start: /jackin/bin/plan,
# read-only to the agent. Its rungs are tried in order; a rung that exits
# non-zero within the plan's grace period did not start (an unknown id, no
# conversation to continue), so the next one runs. Each line of the plan is
# one argv element, read with `read -r` and never evaluated. What happened
# goes to /jackin/state/agent-start (each rung tried, with the second from
# which it counts as started), and the last 2 KiB a failed rung wrote
# to standard error to agent-start.<rung>.err, and the seconds it ran
# between, for jackin to report.
state=/jackin/state
plan=/jackin/bin/plan
report=$state/agent-start
now() { date -u +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo ""; }
started=$(now)
stopped=
trap 'stopped=TERM' TERM
trap 'stopped=HUP' HUP
trap ':' INT
# Under authForward: token, a CLI that takes no token from its environment
# is logged in first by the login steps jackin writes before each start,
# /jackin/bin/login (read-only to the agent; one value a line, read with
# `read -r`, never evaluated). A step whose variable is set runs with the
# value on its standard input, never in an argv, and what it prints is
# discarded, so that no key reaches the terminal or the log. The file it
# keeps the login in is made a link to the container's tmpfs
# (/jackin/login, empty at every start, gone at the stop): the unit's home
# is on the host, and the token must not be. The variable is then taken out
# of the environment the agent inherits.
logins=/jackin/bin/login
login_step() {
  l_want=$1 l_n=0 l_var= l_keep= l_into=
  set --
  while IFS= read -r l_line; do
    case $l_line in
      "step "*) l_n=$((l_n + 1)); [ "$l_n" -eq "$l_want" ] && l_var=${l_line#step } ;;
      "keep "*) [ "$l_n" -eq "$l_want" ] && l_keep=${l_line#keep } ;;
      "into "*) [ "$l_n" -eq "$l_want" ] && l_into=${l_line#into } ;;
      "arg "*) [ "$l_n" -eq "$l_want" ] && set -- "$@" "${l_line#arg }" ;;
    esac
  done < "$logins"
  # Only a variable's name is evaluated, once it is known to be one; the
  # value goes through no program's argv (printf is the shell's own).
  case $l_var in ''|[0-9]*|*[!A-Za-z0-9_]*) return 0 ;; esac
  eval "l_value=\${$l_var-}"
  if [ -n "$l_value" ] && [ $# -gt 0 ]; then
    if [ -n "$l_keep" ]; then
      mkdir -p "${l_keep%/*}" 2>/dev/null
      rm -f "$l_keep" 2>/dev/null
      ln -s "$l_into" "$l_keep" 2>/dev/null ||
        echo "jackin: $l_keep could not be made a link to the login on the container's tmpfs" >&2
    fi
    printf '%s\n' "$l_value" | "$@" >/dev/null 2>&1
    l_code=$?
    l_value=
    [ "$l_code" -eq 0 ] ||
      echo "jackin: the login step \`$*\` exited $l_code; the agent starts without its login" >&2
  fi
  unset "$l_var"
}
if [ -r "$logins" ]; then
  l_steps=$(grep -c '^step ' "$logins")
  l_i=0
  while [ "$l_i" -lt "$l_steps" ]; do
    l_i=$((l_i + 1))
    login_step "$l_i"
  done
fi
# The workspace's setup (/jackin/bin/setup, read-only to the agent; one
# argv element a line, read with `read -r`, never evaluated), once per
# setup: at the first start that has it, before the agent, in the working
# directory, as the agent's user. Its output goes to $state/setup.log, how
# it ended to $state/setup.result for jackin to take in, and its digest to
# $state/setup.done, so that no restart (a restore of any tier, a resume)
# runs it again, while a rollout that changes it does. Past its timeout it
# is stopped; either way the agent starts. A stop during it leaves it
# undone, to run at the next start.
setup=/jackin/bin/setup
run_setup() {
  s_digest= s_timeout=600 s_skip= s_code=
  set --
  while IFS= read -r s_line; do
    case $s_line in
      "digest "*) s_digest=${s_line#digest } ;;
      "timeout "*) s_timeout=${s_line#timeout } ;;
      skip) s_skip=1 ;;
      "arg "*) set -- "$@" "${s_line#arg }" ;;
    esac
  done < "$setup"
  case $s_timeout in ''|*[!0-9]*) s_timeout=600 ;; esac
  [ -n "$s_digest" ] && [ $# -gt 0 ] || return 0
  [ "$(cat "$state/setup.done" 2>/dev/null)" != "$s_digest" ] || return 0
  if [ -n "$s_skip" ]; then
    s_outcome=skipped
  else
    echo "jackin: setting the session up: $* (output in /jackin/state/setup.log)"
    rm -f "$state/.setup.timedout"
    "$@" > "$state/setup.log" 2>&1 < /dev/null &
    s_pid=$!
    ( trap - TERM; sleep "$s_timeout"; : > "$state/.setup.timedout"
      kill -TERM "$s_pid" 2>/dev/null; sleep 5; kill -KILL "$s_pid" 2>/dev/null ) &
    s_watch=$!
    # A stop interrupts the wait: the setup is then stopped too.
    wait "$s_pid"
    s_code=$?
    while [ -n "$stopped" ] && kill -0 "$s_pid" 2>/dev/null; do
      kill -TERM "$s_pid" 2>/dev/null; sleep 1
    done
    kill "$s_watch" 2>/dev/null
    [ -z "$stopped" ] || return 0
    if [ -e "$state/.setup.timedout" ]; then
      s_outcome=timed-out s_code=
    elif [ "$s_code" -eq 0 ]; then
      s_outcome=done
    else
      s_outcome=failed
    fi
    rm -f "$state/.setup.timedout"
    echo "jackin: the setup ended: $s_outcome${s_code:+ (exit $s_code)}"
  fi
  printf 'digest %s\noutcome %s\n' "$s_digest" "$s_outcome" > "$state/setup.result"
  [ -z "$s_code" ] || printf 'code %s\n' "$s_code" >> "$state/setup.result"
  printf '%s\n' "$s_digest" > "$state/setup.done"
}
# The agent's report of its state (/jackin/bin/report) is of one run: an
# old one would speak for an agent that has not said anything yet.
rm -f "$state/report" 2>/dev/null
if [ -r "$setup" ] && [ -z "$stopped" ]; then
  run_setup
fi
code=
if [ -r "$plan" ]; then
  grace=$(sed -n 's/^grace \([0-9][0-9]*\)$/\1/p' "$plan")
  grace=${grace:-15}
  rungs=$(grep -c '^rung ' "$plan")
  # An agent whose first prompt waits and reports nothing: each start
  # stands for its report that it waits (the report program's own words).
  waits=$(grep -c '^waits$' "$plan")
  # One way to start needs no report: jackin knew it when it started.
  [ "$rungs" -gt 1 ] || report=/dev/null
  stamp="$(date +%s)-$(cat /proc/sys/kernel/random/uuid 2>/dev/null || echo $$)"
  printf 'start %s\n' "$stamp" > "$report"
  i=0
  while [ "$i" -lt "$rungs" ] && [ -z "$stopped" ]; do
    i=$((i + 1))
    kind=
    n=0
    set --
    while IFS= read -r line; do
      case $line in
        "rung "*) n=$((n + 1)); [ "$n" -eq "$i" ] && kind=${line#rung } ;;
        "arg "*) [ "$n" -eq "$i" ] && set -- "$@" "${line#arg }" ;;
      esac
    done < "$plan"
    [ $# -gt 0 ] || continue
    t0=$(date +%s)
    # The second from which this rung is how the agent started, for good:
    # when its grace period is over, or at once for the last rung, which
    # nothing follows. jackin reads the report again after it.
    settles=$((t0 + grace))
    [ "$i" -lt "$rungs" ] || settles=$t0
    printf 'try %s %s\n' "$kind" "$settles" >> "$report"
    [ "$waits" -eq 0 ] || /bin/sh /jackin/bin/report needs-input < /dev/null
    if [ "$i" -eq "$rungs" ]; then
      "$@"
      code=$?
      break
    fi
    # Standard error passes through to the terminal and its tail is kept.
    # Signals stay the agent's: the helpers catch them (a caught signal is
    # not inherited as ignored) and carry on until the agent is done, so
    # its exit code is recorded and its last words are not cut off.
    err=$state/agent-start.$kind.err
    codefile=$state/.agent-start.code
    rm -f "$codefile"
    { { trap ':' INT TERM HUP; "$@"; echo "$?" > "$codefile"; } 2>&1 1>&3 3>&- |
      { trap ':' INT TERM HUP; tee /dev/stderr | tail -c 2048 > "$err"; }; } 3>&1
    code=$(cat "$codefile" 2>/dev/null)
    code=${code:-1}
    t1=$(date +%s)
    if [ -n "$stopped" ] || [ "$code" -eq 0 ] || [ $((t1 - t0)) -ge "$grace" ]; then
      break
    fi
    # The rung's window, for jackin to read what it printed on its
    # terminal (standard output included) from the engine's log: its
    # seconds, and the next one for output the engine took in late. The
    # next rung starts in the second after that, so that no second holds
    # two rungs' output (the clock here counts whole seconds).
    printf 'fallback %s %s %s %s\n' "$kind" "$code" "$t0" "$t1" >> "$report"
    while [ -z "$stopped" ] && [ "$(date +%s)" -lt $((t1 + 2)) ]; do sleep 1; done
  done
fi
if [ -z "$code" ]; then
  "$@"
  code=$?
fi
finished=$(now)
reason=exited
[ -z "$stopped" ] || reason=signal:$stopped
printf '{"instance":"%s","container":"%s","exitCode":%d,"startedAt":"%s","finishedAt":"%s","reason":"%s"}\n' \
  "${JACKIN_INSTANCE:-}" "${JACKIN_CONTAINER:-}" "$code" "$started" "$finished" "$reason" \
  > "$state/.exit.json.tmp" && mv -f "$state/.exit.json.tmp" "$state/exit.json"
exit "$code"
