#!/bin/sh
# Finds sanitizer reports in the logs of a sanitized test run:
#   sh scripts/sanitizer_reports.sh LOG...
# A report is what AddressSanitizer, LeakSanitizer or UBSan print when they
# find something (a process's exit code alone is not enough: busted's TAP
# count says nothing of a leak LeakSanitizer reports as the process ends,
# after the last `ok`), or LeakSanitizer's word that it could not check.
# For each log holding one it prints "sanitizer report in LOG:" and the
# reports (each from its first line to its SUMMARY, at most 60 lines a log).
# Exit status: 0 when no log holds a report, 1 when one does, 2 when a log
# cannot be read.
status=0
for log in "$@"; do
  if [ ! -r "$log" ]; then
    echo "sanitizer_reports.sh: cannot read $log" >&2
    status=2
    continue
  fi
  report=$(awk '
    /==[0-9]+==ERROR: (AddressSanitizer|LeakSanitizer)/ ||
    /:[0-9]+:[0-9]+: runtime error: / ||
    /LeakSanitizer has encountered a fatal error/ { inside = 1 }
    inside && shown < 60 { print; shown++ }
    /^SUMMARY: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer)/ { inside = 0 }
    /LeakSanitizer has encountered a fatal error/ { inside = 0 }
  ' "$log")
  if [ -n "$report" ]; then
    printf 'sanitizer report in %s:\n%s\n' "$log" "$report"
    [ "$status" = 2 ] || status=1
  fi
done
exit "$status"
