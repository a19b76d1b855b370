#!/usr/bin/env bash
# gotest-recap.sh LOG COMMAND...: runs COMMAND (a `go test -v` of a long
# end-to-end suite), its output on the terminal and in LOG; when it fails,
# prints each failed test's own messages (its *_test.go lines) once more at
# the end. A verbose run prints a message when it happens, often hundreds of
# lines above the verdict, and a CI log is read from its tail.
set -uo pipefail
log=$1
shift
mkdir -p "$(dirname "$log")"
"$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] && exit 0
echo "--- the failed tests' messages once more (the whole output: $log):"
awk '
	# A -v run names the test each line belongs to (=== RUN, NAME, CONT).
	/^=== (RUN|NAME|CONT|PAUSE) / { cur = $3; more = 0; next }
	/^ *--- (FAIL|PASS|SKIP): / {
		if ($2 == "FAIL:" && !($3 in failed)) { failed[$3] = 1; order[++nf] = $3 }
		more = 0
		next
	}
	# A message, "    file_test.go:123: text"; its further lines are
	# indented deeper (six at most are kept).
	/^ +[A-Za-z0-9_]+_test\.go:[0-9]+: / {
		msg[cur] = msg[cur] $0 "\n"; depth = match($0, /[^ ]/); more = 6; next
	}
	more > 0 && match($0, /[^ ]/) > depth { msg[cur] = msg[cur] $0 "\n"; more--; next }
	{ more = 0 }
	END {
		shown = 0
		for (i = 1; i <= nf; i++) {
			t = order[i]
			if (!(t in msg)) continue
			printf "%s:\n%s", t, msg[t]
			shown++
		}
		if (shown == 0) print "(no test message: the failure is in the output above)"
	}
' "$log" | head -n 150
exit "$rc"
