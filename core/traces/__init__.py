"""Session traces (docs/traces.md): OpenTelemetry spans in the GenAI semantic conventions, kept as
OTLP JSON Lines in each Command's folder and sent to any OTLP/HTTP collector by ``assay traces export``.

``otlp`` writes, reads and sends the format; ``spans`` makes spans with the SDK after the fact;
``session`` turns one session's decoded events into spans, for every Harness alike; ``workflow``
is a Command's trace: an Experiment's Trials, grading steps and Verdict, a Scoring run's Grader
sessions; ``read`` turns a trace file back into what the Console shows.
"""
