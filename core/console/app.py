"""The Console's routes: each page paired with a CLI command, its data as JSON at the same URL
(``Accept: application/json``, or ``?format=json``), and the few actions the specs allow.

Bound to loopback, a request must name a loopback host (so a web page elsewhere can't reach it by
DNS rebinding); bound elsewhere, every request must carry the token printed at start. Every form
carries a per-process CSRF secret, and a POST from another origin is refused. The Console never
starts an Experiment or a Scoring run.
"""

from __future__ import annotations

import hmac
import os
import re
import secrets
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import trio
from assay.console import change, shown, views
from assay.engine import results, reviews
from assay.evaltasks import proposals
from assay.evaltasks.manifests import ManifestError
from assay.hooks.loaded import Plugins
from assay.scoring import origins, yours
from assay.scoring.github import GitHub, GitHubError
from assay.scoring.store import CRITERIA, KIND, ScoringStore
from assay.storage import commands, cronjobs, formats
from assay.storage.files import Locked
from assay.storage.home import AssayHome
from assay.storage.records import CommandRecord
from assay.storage.userconfig import UserConfigError, scoring_config
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

HERE = Path(__file__).parent
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
COOKIE = "assay_console_token"
# On every answer: never framed (clickjacking), scripts and styles only its own, nothing sniffed.
# Inline styles are allowed for the positions a page computes (the timeline's bars), never scripts.
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                               "img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; "
                               "frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # "no-referrer" would make a form's Origin "null"
}
STOP_WAIT = 30.0
LIVE_EVERY = 1.0  # seconds between looks at a running Experiment, for its page's events
KEEPALIVE = 15.0  # seconds of no change before a keep-alive comment
SSE_LINES = re.compile(r"\r\n|\r|\n")  # what ends a line of an event stream (a \r in a Trial's text too)


class Console:
    """One Console: where it reads (``home``), how it is reached, and its secrets."""

    def __init__(self, home: AssayHome, plugins: Plugins, *, token: str | None = None,
                 github: Callable[[], GitHub] = GitHub):
        self.home, self.plugins, self.token, self.github = home, plugins, token, github
        self.reader = os.environ.get("USER", "")  # who reviews, unless a page names its reader
        self.csrf = secrets.token_urlsafe(24)
        self.templates = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape())
        self.templates.filters["url"] = lambda value: quote(str(value), safe="")
        self.templates.globals["one_look_advice"] = results.one_look_advice
        self.templates.globals.update(csrf=self.csrf, criteria=CRITERIA, duration=shown.duration)

    def page(self, request: Request, template: str, data: dict[str, Any], status: int = 200) -> Response:
        """The page, or its data as JSON when the request asks for JSON."""
        if _wants_json(request):
            return JSONResponse(data, status_code=status)
        fragment = request.query_params.get("fragment")
        name = f"{template}_{fragment}.html" if fragment in ("live",) else f"{template}.html"
        html = self.templates.get_template(name).render(data=data, request=request, path=request.url.path)
        return HTMLResponse(html, status_code=status)

    def error(self, request: Request, status: int, message: str) -> Response:
        return self.page(request, "error", {"error": message, "status": status}, status)

    async def http_error(self, request: Request, exc: Exception) -> Response:
        """An unknown address (404) or method (405) as a page of the Console, not Starlette's bare text."""
        status = getattr(exc, "status_code", 500)
        message = {404: f"There is no page at {request.url.path}.",
                   405: f"{request.method} is not allowed at {request.url.path}."}.get(status, str(getattr(exc, "detail", "")))
        return self.error(request, status, message)

    # --- pages ------------------------------------------------------------------------------

    async def inbox(self, request: Request) -> Response:
        return self.page(request, "inbox", views.inbox(self.home))

    async def experiments(self, request: Request) -> Response:
        return self.page(request, "experiments", views.experiments(self.home))

    async def experiment(self, request: Request) -> Response:
        return self._view(request, "experiment", views.experiment, request.path_params["id"], _sort(request))

    async def experiment_events(self, request: Request) -> Response:
        """The Experiment page's live part as server-sent events: each time it changes (looked at every
        ``LIVE_EVERY`` seconds), an ``update`` with the new HTML; an ``end`` once the Experiment stops
        running. The page falls back to fetching ``?fragment=live`` if the connection drops."""
        id, sort = request.path_params["id"], _sort(request)
        try:
            results.find(self.home, id)
        except ValueError as e:
            return self.error(request, 404, str(e))
        template = self.templates.get_template("experiment_live.html")

        async def stream() -> AsyncIterator[str]:
            shown_html, quiet = None, 0.0
            while not await request.is_disconnected():
                data = await run_in_threadpool(views.experiment, self.home, id, sort)
                html = template.render(data=data, request=request, path=f"/experiments/{quote(id)}")
                if html != shown_html:
                    yield "event: update\n" + "".join(f"data: {line}\n" for line in SSE_LINES.split(html)) + "\n"
                    shown_html, quiet = html, 0.0
                if data["state"] != "running":
                    yield "event: end\ndata: \n\n"
                    return
                if quiet >= KEEPALIVE:  # a comment: proxies and browsers keep the connection
                    yield ": still running\n\n"
                    quiet = 0.0
                await trio.sleep(LIVE_EVERY)
                quiet += LIVE_EVERY

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-store"})

    async def trial(self, request: Request) -> Response:
        """A Trial's page (read in a worker thread; its diff in a grading sandbox), or with
        ``?evidence=PATH`` one of its evidence files, shown as escaped text."""
        p = request.path_params
        args = (p["id"], p["task"], p["arm_index"], p["attempt"])
        if "evidence" in request.query_params:
            return self._view(request, "evidence", views.evidence, *args, request.query_params["evidence"])
        try:
            data = await run_in_threadpool(views.trial, self.home, self.plugins, *args)
        except views.NotFound as e:
            return self.error(request, 404, str(e))
        backend = self.plugins.sandbox_backends().get(data["sandbox"])
        data["change"] = await change.committed_change(backend, Path(data["trial"]["folder"]), data.pop("base"))
        return self.page(request, "trial", data)

    async def pair(self, request: Request) -> Response:
        """``assay experiments ID --pair PAIR``: the blind page, then (after the preference) the reveal."""
        p = request.path_params
        try:
            exp = results.find(self.home, p["id"])
            reader = reviews.reader_of(exp, request.query_params.get("reader") or self.reader)
            data = {**reviews.page(self.home, self.plugins, exp, p["pair"], reader), "experiment": exp.id}
        except ValueError as e:
            return self.error(request, 404, str(e))
        data["revealed"] = reviews.reveal(exp, p["pair"], reader) if data["step"] == "revealed" else None
        return self.page(request, "pair", data)

    async def review(self, request: Request) -> Response:
        """``assay review ID PAIR``: sealed merge calls per side, then a preference (and a rubric)."""
        p, form = request.path_params, await request.form()
        kind = str(form.get("kind") or "")
        try:
            exp = results.find(self.home, p["id"])
            reader = reviews.reader_of(exp, str(form.get("reader") or "") or self.reader)
            if kind == "merge":
                calls = {side: str(form.get(f"merge_{side}") or "") for side in "AB"}
                if any(v not in ("yes", "no") for v in calls.values()):
                    raise ValueError("call both sides: yes or no for A and for B")
                reviews.record(self.home, self.plugins, exp, p["pair"], reader,
                               merge={side: v == "yes" for side, v in calls.items()})
            elif kind == "prefer":
                reviews.record(self.home, self.plugins, exp, p["pair"], reader, prefer=str(form.get("prefer") or ""),
                               rubric=_rubric(str(form.get("rubric") or "")))
            else:
                raise ValueError("kind: expected merge or prefer")
        except ValueError as e:
            return self.error(request, 400, str(e))
        except Locked:
            return self.error(request, 409, "the Experiment is running; review once it ends")
        return RedirectResponse(f"/experiments/{quote(exp.id)}/pairs/{quote(p['pair'])}?reader={quote(reader)}",
                                status_code=303)

    async def scores(self, request: Request) -> Response:
        return self.page(request, "scores", views.scores(self.home))

    async def scoring_runs(self, request: Request) -> Response:
        return self.page(request, "scoring_runs", views.scoring_runs(self.home))

    async def scoring_run(self, request: Request) -> Response:
        return self._view(request, "scoring_run", views.scoring_run, request.path_params["id"])

    async def pull(self, request: Request) -> Response:
        return self._view(request, "pull", views.pull_scores, request.path_params["pull"])

    async def bugs(self, request: Request) -> Response:
        return self.page(request, "bugs", views.bug_origins(self.home))

    async def cron(self, request: Request) -> Response:
        return self.page(request, "cron", cronjobs.listing(self.home, commands.now()))

    async def bug(self, request: Request) -> Response:
        return self._view(request, "bug", views.bug_origin, request.path_params["issue"])

    def _view(self, request: Request, template: str, view: Callable[..., dict], *args: Any) -> Response:
        try:
            return self.page(request, template, view(self.home, *args))
        except views.NotFound as e:
            return self.error(request, 404, str(e))

    # --- actions ----------------------------------------------------------------------------

    async def stop(self, request: Request) -> Response:
        """``assay stop ID`` from the Experiment's page."""
        try:
            exp = results.find(self.home, request.path_params["id"])
        except ValueError as e:
            return self.error(request, 404, str(e))
        return self._stop(request, "experiment", exp.id, f"Experiment {exp.id}", f"/experiments/{quote(exp.id)}")

    async def stop_command(self, request: Request) -> Response:
        """``assay stop ID`` from the Inbox: any running Command (an Experiment, a Scoring run)."""
        kind, id = request.path_params["kind"], request.path_params["id"]
        return self._stop(request, kind, id, f"{kind.title()} {id}", "/")

    def _stop(self, request: Request, kind: str, id: str, what: str, back: str) -> Response:
        path = commands.record_path(self.home, kind, id)
        record = formats.read(path, CommandRecord) if "/" not in kind + id and path.is_file() else None
        if record is None or not commands.runs(record):
            return self.error(request, 409, f"{what} is not running")
        if not commands.stop(record, STOP_WAIT):
            return self.error(request, 504, f"{what} did not stop within {STOP_WAIT:.0f}s")
        return RedirectResponse(back, status_code=303)

    async def stop_scoring(self, request: Request) -> Response:
        """``assay stop ID`` from the Scoring run's page: the session in flight is cut short, and what
        the run didn't score waits for the next one."""
        id = request.path_params["id"]
        return self._stop(request, KIND, id, f"Scoring run {id}", f"/scoring-runs/{quote(id, safe='')}")

    async def proposals(self, request: Request) -> Response:
        return self.page(request, "proposals", views.proposals(self.home, self.plugins))

    async def approve(self, request: Request) -> Response:
        """``assay approve PROPOSAL``: validated against its suite's kind, moved in whole or not at all."""
        name = request.path_params["name"]
        try:
            proposals.approve(self.home, self.plugins.suite_kinds(), name, user=os.environ.get("USER"))
        except proposals.ProposalError as e:
            return self.error(request, 400, str(e))
        except ManifestError as e:
            return self.error(request, 400, f"{name} can't be approved: " + "; ".join(
                f"{q.file}: {q.field}: {q.message}" for q in e.problems))
        return RedirectResponse("/proposals", status_code=303)

    async def recheck(self, request: Request) -> Response:
        """``assay recheck ID TRIAL --pass|--fail --why …``: your judgement beside the Grader's."""
        form = await request.form()
        verdict = str(form.get("verdict") or "")
        if verdict not in ("pass", "fail"):
            return self.error(request, 400, "verdict: expected pass or fail")
        try:
            exp = results.find(self.home, request.path_params["id"])
            results.recheck(self.home, exp, str(form.get("trial") or ""), verdict == "pass", str(form.get("why") or ""),
                            os.environ.get("USER", "unknown"), results.wrong_finding_kinds(self.plugins))
        except ValueError as e:
            return self.error(request, 400, str(e))
        except Locked:
            return self.error(request, 409, "the Experiment is running; recheck it once it ends")
        return RedirectResponse(f"/experiments/{quote(exp.id)}", status_code=303)

    async def mine(self, request: Request) -> Response:
        """``assay scores PULL --mine``: your five Scores (all or some), each with its reason."""
        key = request.path_params["pull"]
        form = await request.form()
        given = {name: (str(form.get(name.lower()) or "") or None) for name in CRITERIA}
        why = [f"{name}={form.get(f'why_{name.lower()}')}" for name in CRITERIA
               if given[name] and str(form.get(f"why_{name.lower()}") or "").strip()]
        try:
            yours.enter(ScoringStore(self.home), key, given, why)
        except ValueError as e:
            return self.error(request, 400, str(e))
        return RedirectResponse(f"/scores/{quote(key, safe='')}", status_code=303)

    async def settle(self, request: Request) -> Response:
        """``assay bug-origins ISSUE --confirm | --correct PR | --none``."""
        key = request.path_params["issue"]
        form = await request.form()
        action = str(form.get("action") or "")
        if action not in ("confirm", "correct", "none"):
            return self.error(request, 400, "action: expected confirm, correct or none")
        try:
            github = self.github()
            if action != "none":
                github.check()
            origins.settle(self.home, github, key, confirm=action == "confirm",
                           correct=str(form.get("pull") or "") if action == "correct" else None,
                           none=action == "none", suite=scoring_config(self.home.root).review_suite,
                           now=commands.now())
        except (origins.OriginError, GitHubError, UserConfigError) as e:
            return self.error(request, 400, str(e))
        return RedirectResponse(f"/bug-origins/{quote(key, safe='')}", status_code=303)


def _sort(request: Request) -> str:
    """The Eval tasks' order a page asks for (``?sort=difference``, ``-`` first: descending)."""
    sort = request.query_params.get("sort", "task")
    return sort if sort.lstrip("-") in shown.SORTS else "task"


def _rubric(text: str) -> dict[str, int]:
    """``name=1..5, …`` (empty: no rubric)."""
    out = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, value = item.partition("=")
        if not name.strip() or not value.strip().isdigit() or not 1 <= int(value) <= 5:
            raise ValueError(f"rubric '{item}': expected NAME=1..5")
        out[name.strip()] = int(value)
    return out


def _wants_json(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return request.query_params.get("format") == "json" or ("application/json" in accept and "text/html" not in accept)


class Guard(BaseHTTPMiddleware):
    """The host or token check on every request, and the CSRF check on every POST."""

    def __init__(self, app: Any, console: Console, loopback: bool):
        super().__init__(app)
        self.console, self.loopback = console, loopback

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        response = await self._checked(request, call_next)
        response.headers.update(HEADERS)
        return response

    async def _checked(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        console = self.console
        host = request.headers.get("host", "").rsplit(":", 1)[0] if "]" not in request.headers.get("host", "") \
            else request.headers.get("host", "").split("]")[0] + "]"
        if self.loopback and host not in LOOPBACK:
            return console.error(request, 403, f"this Console answers only on loopback, not as '{host}'")
        given = request.query_params.get("token") or request.cookies.get(COOKIE) or \
            request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if console.token and not hmac.compare_digest(given or "", console.token):
            return console.error(request, 401, "this Console needs the token it printed when it started (?token=…)")
        if request.method == "POST":
            origin = request.headers.get("origin")
            await request.body()  # read whole first: the body is then kept for the route's own form()
            form = await request.form()
            if origin and origin.split("//", 1)[-1] != request.headers.get("host"):
                return console.error(request, 403, f"a form from {origin} is refused")
            if not hmac.compare_digest(str(form.get("csrf") or ""), console.csrf):
                return console.error(request, 403, "the form's CSRF token is missing or stale: reload the page")
        response = await call_next(request)
        if console.token and request.query_params.get("token"):
            response.set_cookie(COOKIE, console.token, httponly=True, samesite="strict")
        return response


def make_app(home: AssayHome, plugins: Plugins, *, token: str | None = None, loopback: bool = True,
             github: Callable[[], GitHub] = GitHub) -> Starlette:
    """The Console's ASGI app over ``home``, with the installed ``plugins`` (suite kinds, Graders)."""
    console = Console(home, plugins, token=token, github=github)
    routes = [
        Route("/", console.inbox),
        Route("/experiments", console.experiments),
        Route("/experiments/{id}", console.experiment),
        Route("/experiments/{id}/events", console.experiment_events),
        Route("/experiments/{id}/stop", console.stop, methods=["POST"]),
        Route("/commands/{kind}/{id}/stop", console.stop_command, methods=["POST"]),
        Route("/experiments/{id}/recheck", console.recheck, methods=["POST"]),
        Route("/experiments/{id}/pairs/{pair}", console.pair),
        Route("/experiments/{id}/pairs/{pair}/review", console.review, methods=["POST"]),
        Route("/experiments/{id}/trials/{task:path}/{arm_index}/{attempt:int}", console.trial),
        Route("/scoring-runs", console.scoring_runs),
        Route("/scoring-runs/{id}", console.scoring_run),
        Route("/scoring-runs/{id}/stop", console.stop_scoring, methods=["POST"]),
        Route("/scores", console.scores),
        Route("/scores/{pull:path}/mine", console.mine, methods=["POST"]),
        Route("/scores/{pull:path}", console.pull),
        Route("/proposals", console.proposals),
        Route("/proposals/{name}/approve", console.approve, methods=["POST"]),
        Route("/cron-jobs", console.cron),
        Route("/bug-origins", console.bugs),
        Route("/bug-origins/{issue:path}", console.settle, methods=["POST"]),
        Route("/bug-origins/{issue:path}", console.bug),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    return Starlette(routes=routes, middleware=[Middleware(Guard, console=console, loopback=loopback)],
                     exception_handlers={HTTPException: console.http_error})
