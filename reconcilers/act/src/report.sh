#!/bin/sh
# jackin's report program, bind-mounted read-only at /jackin/bin/report.
# Usage: report STATE [-- PROGRAM [ARG…]]
#
# An agent's own hooks run it (claude's, from the settings jackin writes)
# to say what the agent does: working, needs-input, needs-permission,
# turn-done or ended. It writes `STATE SECONDS` to /jackin/state/report,
# whole (a temporary file, then a rename), for jackin to read as the
# agent's attention. The word comes from jackin's own settings, never from
# what the agent was given: any other word writes nothing. The hook's input
# (the agent's JSON about the event) is not read: it never reaches the
# report, and a hook run from a terminal would wait on it.
#
# After `--`, the rest is the program the agent would have run in its
# place (codex has one `notify` program: jackin's goes first in its argv,
# and the operator's follows), run with the arguments the agent added
# (codex's JSON), once the report is written.
case $1 in
  working | needs-input | needs-permission | turn-done | ended) ;;
  *) exit 0 ;;
esac
state=/jackin/state
tmp=$state/.report.$$
if printf '%s %s\n' "$1" "$(date +%s)" > "$tmp" 2>/dev/null; then
  mv -f "$tmp" "$state/report" 2>/dev/null || rm -f "$tmp"
fi
# The agent's own arguments follow: with nothing before them but `--`,
# there is no program of the operator's to run (codex adds one argument).
if [ "$2" = "--" ] && [ $# -gt 3 ]; then
  shift 2
  exec "$@"
fi
exit 0
