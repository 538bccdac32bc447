"""The Scoring run: a weekly blind grade of merged production pull requests (docs/scoring.md).

``builtwith`` reads and writes the line a Factory stamps on its pull requests; ``github`` asks
GitHub through the user's own ``gh``; ``sample`` draws the week's pull requests; ``packet``
builds what the Grader sees; ``store`` keeps Scores under ``ASSAY_HOME/evals/scoring/``; ``run``
is the Command that ties them together.
"""
