#!/bin/sh
# Finds sanitizer reports in the logs of a sanitized test run:
#   sh scripts/sanitizer_reports.sh LOG...
# A report is what AddressSanitizer, LeakSanitizer or UBSan print when they
# find something (a process's exit code alone is not enough: busted's TAP
# count says nothing of a leak LeakSanitizer reports as the process ends,
# after the last `ok`). For each log holding one it prints
# "sanitizer report in LOG:" and the reports (each from its first line to
# its SUMMARY, at most 60 lines a log).
# LeakSanitizer can also fail to check at all: its tracer (the thread that
# stops the others to scan them) crashes now and then, a known fault of the
# sanitizer's (google/sanitizers#1353), and the process then ends without
# having been checked. Such a log is named too ("leak check did not run in
# LOG:"), as no clean one.
# Exit status: 2 when a log cannot be read, else 1 when a log holds a
# report, else 3 when a leak check did not run, else 0.
unreadable=
reported=
unchecked=
for log in "$@"; do
  if [ ! -r "$log" ]; then
    echo "sanitizer_reports.sh: cannot read $log" >&2
    unreadable=1
    continue
  fi
  report=$(awk '
    /==[0-9]+==ERROR: (AddressSanitizer|LeakSanitizer)/ ||
    /:[0-9]+:[0-9]+: runtime error: / { inside = 1 }
    inside && shown < 60 { print; shown++ }
    /^SUMMARY: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer)/ { inside = 0 }
  ' "$log")
  if [ -n "$report" ]; then
    printf 'sanitizer report in %s:\n%s\n' "$log" "$report"
    reported=1
  elif grep -q 'LeakSanitizer has encountered a fatal error' "$log"; then
    printf 'leak check did not run in %s:\n' "$log"
    grep -B1 -A2 'LeakSanitizer has encountered a fatal error' "$log" | head -n 8
    unchecked=1
  fi
done
if [ -n "$unreadable" ]; then exit 2; fi
if [ -n "$reported" ]; then exit 1; fi
if [ -n "$unchecked" ]; then exit 3; fi
exit 0
