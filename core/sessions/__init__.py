"""Agent sessions: what every Harness and sandbox backend shares to run one session and read it.

``harnesskit`` a Harness's binary, environment allow-list and fresh home; ``credentials`` the
logins handed to sessions; ``harness_arm`` one Trial's session of a Factory Arm; ``supervise``
running a session's process to its end, timeout or Stop; ``spawn`` starting it from trio's own
thread (which outlives it); ``hostkills`` telling a kill from outside the sandbox from one
inside; ``proctree`` finding and killing every process a session started; ``streams`` judging a
session from its event stream (outcome, void cause, tokens, cost); ``leftovers`` work on what a
Trial left (checkouts, test runs, diffs, status) as a job in a grading sandbox of its own, its report
checked (``leftovers_inside`` is what runs in there); ``interrupts`` a Ctrl-C Python drops, kept
for whatever takes Stop over.
"""
