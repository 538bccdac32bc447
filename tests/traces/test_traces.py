"""Session traces (issue 32; spec 977 D15/US58/D65: every Trial records its Session trace, and each
session is a span of the Experiment's trace): OTLP JSON Lines read back by the OTLP protobuf/JSON
parser, the span tree and the GenAI attributes, and ``assay traces export`` to a real OTLP/HTTP
receiver on loopback."""

from __future__ import annotations

import base64
import contextlib
import http.server
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.conftest import run_cli
from tests.experiment_fixtures import (PLUGINS, finished_copy, finished_experiment_once, make_process_suite, make_runner,
                                       runner_experiment)
from tests.scoring_fixtures import RUN, score, scored, scored_once, world  # noqa: F401 - fixtures

HEX = re.compile(r"[0-9a-f]+")


def parsed(path: Path) -> list[ExportTraceServiceRequest]:
    """Each line of an OTLP JSON Lines file, as OTLP/JSON says: ids as hex, parsed by protobuf."""
    out = []
    for line in path.read_text().splitlines():
        data = json.loads(line)
        for resource in data["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    assert len(span["traceId"]) == 32 and HEX.fullmatch(span["traceId"]), span["traceId"]
                    assert len(span["spanId"]) == 16 and HEX.fullmatch(span["spanId"])
                    assert isinstance(span["kind"], int)  # enums as numbers
                    for key in ("traceId", "spanId", "parentSpanId"):  # protobuf's JSON mapping wants base64
                        if key in span:
                            span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
        out.append(json_format.ParseDict(data, ExportTraceServiceRequest()))
    return out


def spans_of(requests: list[ExportTraceServiceRequest]) -> list[dict]:
    out = []
    for request in requests:
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    attributes = {}
                    for a in span.attributes:
                        kind = a.value.WhichOneof("value")
                        value = getattr(a.value, kind)
                        attributes[a.key] = list(v.string_value for v in value.values) if kind == "array_value" else value
                    out.append({"name": span.name, "trace": span.trace_id.hex(), "id": span.span_id.hex(),
                                "parent": span.parent_span_id.hex(), "attributes": attributes,
                                "start": span.start_time_unix_nano, "end": span.end_time_unix_nano,
                                "error": span.status.code == span.status.STATUS_CODE_ERROR})
    return out


@pytest.fixture(scope="session")
def experiment_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return finished_experiment_once(tmp_path_factory, tasks=2)


@pytest.fixture
def finished_experiment(experiment_once: Path, assay_home: Path) -> Path:
    """A whole fake-Harness Experiment: 2 tasks, 2 Trials per Arm; the Candidate wrong on t1. Run
    once for this file's tests, each reading its own copy in its ``ASSAY_HOME``."""
    exp_id = finished_copy(experiment_once, assay_home)
    [folder] = (assay_home / "evals" / "experiments").iterdir()
    assert folder.name == exp_id
    return folder


@pytest.mark.slow
def test_a_whole_experiment_writes_its_trace_with_the_span_tree_and_gen_ai_attributes(finished_experiment):
    """977 D15/US58/D65: "every Trial records its Session trace", and "each session is a span of the
    Experiment's trace"; the GenAI semantic conventions name the attributes."""
    folder = finished_experiment
    files = sorted((folder / "traces").rglob("*.jsonl"))
    assert {f.relative_to(folder / "traces").parts[0] for f in files} == {"experiment.jsonl", "verdict.jsonl", "trials",
                                                                          "grading"}
    spans = [s for f in files for s in spans_of(parsed(f))]
    by_id = {s["id"]: s for s in spans}
    assert len({s["trace"] for s in spans}) == 1  # one trace: the Experiment's
    [root] = [s for s in spans if not s["parent"]]
    assert root["name"] == f"experiment {folder.name}"
    assert root["attributes"]["gen_ai.operation.name"] == "invoke_workflow"
    verdict_word = json.loads((folder / "verdict.json").read_text())["verdict"]
    assert root["attributes"]["assay.candidate"].endswith("fake-agent bad") and root["attributes"]["assay.outcome"] == verdict_word

    children = [s for s in spans if s["parent"] == root["id"]]
    trials = [s for s in children if s["name"].startswith("trial ")]
    assert len(trials) == 2 * 2 * 2  # tasks × Arms × Trials per task, one attempt each
    assert {s["name"] for s in children if not s["name"].startswith("trial ")} == {
        "grade fixture/t1", "grade fixture/t2", "verdict"}
    for trial in trials:
        [session] = [s for s in spans if s["parent"] == trial["id"]]
        a = session["attributes"]
        assert session["name"] == "invoke_agent fake-agent"
        assert a["gen_ai.operation.name"] == "invoke_agent" and a["gen_ai.agent.name"] == "fake-agent"
        assert a["gen_ai.provider.name"] == "fake-provider"
        assert a["gen_ai.request.model"] == ("good" if trial["attributes"]["assay.arm"] == "baseline" else "bad")
        assert a["gen_ai.usage.input_tokens"] == 10 and a["gen_ai.usage.output_tokens"] == 5
        assert a["gen_ai.conversation.id"].startswith("s-fixture/") and a["assay.outcome"] == "delivered"
        assert trial["start"] <= session["start"] <= session["end"] <= trial["end"]
        steps = sorted((s for s in spans if s["parent"] == session["id"]), key=lambda s: s["attributes"]["assay.sequence"])
        assert [s["name"] for s in steps] == ["chat fake-model", "chat fake-model", "execute_tool bash"]
        chat, said, tool = steps
        assert chat["attributes"]["gen_ai.operation.name"] == "chat"
        assert chat["attributes"]["gen_ai.usage.output_tokens"] == 3
        message = json.loads(said["attributes"]["gen_ai.output.messages"])[0]
        answer = "wrong" if trial["name"].startswith("trial fixture/t1 candidate-") else "right"
        assert message["parts"][0] == {"type": "text", "content": f"The answer is {answer}; committing it."}
        assert message["parts"][1]["type"] == "tool_call" and message["parts"][1]["name"] == "bash"
        assert tool["attributes"]["gen_ai.operation.name"] == "execute_tool"
        assert tool["attributes"]["gen_ai.tool.name"] == "bash" and tool["attributes"]["gen_ai.tool.call.id"] == "call-1"
        assert json.loads(tool["attributes"]["gen_ai.tool.call.arguments"])["command"].startswith(f"echo {answer}")
        assert "1 file changed" in tool["attributes"]["gen_ai.tool.call.result"] and tool["attributes"]["assay.untrusted"]
        assert session["start"] <= chat["start"] <= tool["start"] <= tool["end"] <= session["end"]

    [grade] = [s for s in children if s["name"] == "grade fixture/t1"]
    scores = {s["name"]: s["attributes"] for s in spans if s["parent"] == grade["id"]}
    assert set(scores) == {"score baseline-0", "score baseline-1", "score candidate-0", "score candidate-1"}
    assert scores["score candidate-0"]["gen_ai.evaluation.name"] == "fixture"
    assert scores["score candidate-0"]["gen_ai.evaluation.score.label"] == "fail"
    assert scores["score candidate-0"]["gen_ai.evaluation.explanation"] == "answer.txt says wrong"
    assert scores["score baseline-0"]["gen_ai.evaluation.score.value"] == 1.0
    [verdict] = [s for s in children if s["name"] == "verdict"]
    assert verdict["attributes"]["assay.verdict"] == verdict_word and verdict["attributes"]["assay.verdict.final"] is True
    assert all(by_id.get(s["parent"]) or not s["parent"] for s in spans)  # every parent is in the trace


class Collector(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver: each POST to /v1/traces parsed as ExportTraceServiceRequest protobuf."""

    received: list[ExportTraceServiceRequest]
    status = 200

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/v1/traces" and self.headers["Content-Type"] == "application/x-protobuf":
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            self.received.append(request)
        self.send_response(self.status if self.path == "/v1/traces" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@contextlib.contextmanager
def collector(status: int = 200) -> Iterator[tuple[str, list]]:
    received: list = []
    handler = type("Handler", (Collector,), {"received": received, "status": status})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_a_custom_runners_trial_is_traced_at_session_level(assay_home, tmp_path):
    """Issue 32: a Session trace "built from each Harness's decoded event stream (so every Harness,
    Custom runners included at session level, gets one)": a Custom runner's Trial (no stream assay
    decodes) is its Trial's span with one session span under it, its outcome and runner named."""
    make_process_suite(assay_home, tasks=1)
    good = make_runner(tmp_path / "good", "good", {"*": "fix"})
    lazy = make_runner(tmp_path / "lazy", "lazy", {"*": "nofix"})
    done = runner_experiment(assay_home, tmp_path, lazy, good)
    assert done.returncode == 0, done.stderr
    [folder] = (assay_home / "evals" / "experiments").iterdir()
    files = sorted((folder / "traces" / "trials").rglob("*.jsonl"))
    assert len(files) == 2  # one Trial per Arm
    for file in files:
        spans = spans_of(parsed(file))
        [trial] = [s for s in spans if s["name"].startswith("trial ")]
        [session] = [s for s in spans if s["parent"] == trial["id"]]
        assert len(spans) == 2 and session["name"] == f"invoke_agent {trial['attributes']['assay.arm.label'].split()[1]}"
        assert trial["attributes"]["assay.arm.label"].startswith("runner ")
        assert session["attributes"]["gen_ai.operation.name"] == "invoke_agent"
        assert session["attributes"]["assay.outcome"] == trial["attributes"]["assay.outcome"] == "delivered"
        assert trial["start"] <= session["start"] <= session["end"] <= trial["end"]


@pytest.mark.slow
def test_traces_export_sends_the_whole_trace_to_an_otlp_http_collector(assay_home, finished_experiment):
    exp = finished_experiment.name
    with collector() as (url, received):
        sent = run_cli(assay_home, "traces", "export", exp[:6], "--endpoint", url, plugins=PLUGINS)
    assert sent.returncode == 0, sent.stderr
    spans = spans_of(received)
    written = [s for f in sorted((finished_experiment / "traces").rglob("*.jsonl")) for s in spans_of(parsed(f))]
    assert sorted(s["id"] for s in spans) == sorted(s["id"] for s in written)
    assert f"sent {len(spans)} spans of Experiment {exp}" in sent.stdout
    names = {s["name"] for s in spans}
    assert {f"experiment {exp}", "verdict", "invoke_agent fake-agent", "execute_tool bash"} <= names


@pytest.mark.slow
def test_traces_export_refused_or_unknown_is_one_line_and_non_zero(assay_home, finished_experiment):
    with collector(status=500) as (url, _):
        refused = run_cli(assay_home, "traces", "export", finished_experiment.name, "--endpoint", url, plugins=PLUGINS)
    assert refused.returncode == 1
    assert refused.stderr.strip() == f"assay: error: {url}/v1/traces refused the traces: HTTP 500 Internal Server Error"
    unknown = run_cli(assay_home, "traces", "export", "nope", "--endpoint", url, plugins=PLUGINS)
    assert unknown.returncode == 2 and "no Experiment 'nope'" in unknown.stderr
    bad = run_cli(assay_home, "traces", "export", finished_experiment.name, "--endpoint", "localhost:4318", plugins=PLUGINS)
    assert bad.returncode == 1 and "--endpoint localhost:4318: expected an http:// or https:// URL" in bad.stderr


@pytest.mark.slow
def test_a_scoring_run_traces_its_grader_sessions_and_exports_them(assay_home, scored):  # noqa: F811
    """Issue 32: "The Scoring run does the same for its Grader sessions": its trace is the run, a step per
    pull request graded, and each Grader session under its step."""
    _, done = scored  # the world after one Scoring run, made once
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["id"]
    folder = assay_home / "evals" / "scoring" / "traces" / run_id
    spans = [s for f in sorted(folder.rglob("*.jsonl")) for s in spans_of(parsed(f))]
    [root] = [s for s in spans if not s["parent"]]
    assert root["name"] == f"scoring run {run_id}" and root["attributes"]["gen_ai.workflow.name"] == "assay scoring"
    grades = [s for s in spans if s["parent"] == root["id"] and s["name"].startswith("grade ")]
    assert len(grades) == len(json.loads(done.stdout)["scored"]) >= 1
    for grade in grades:
        sessions = [s for s in spans if s["parent"] == grade["id"]]
        assert sessions and all(s["name"] == "invoke_agent fake-scorer" for s in sessions)
        assert {s["attributes"]["gen_ai.request.model"] for s in sessions} <= {"claude-sonnet-9", "gpt-9"}
    with collector() as (url, received):
        sent = run_cli(assay_home, "traces", "export", run_id, "--endpoint", url, plugins=PLUGINS)
    assert sent.returncode == 0, sent.stderr
    assert sorted(s["id"] for s in spans_of(received)) == sorted(s["id"] for s in spans)
