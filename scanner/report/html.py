"""The HTML site: Jinja2 templates (autoescape on) over :class:`scanner.report.data.SiteData`.

Every page carries a Content-Security-Policy that forbids scripts, frames, forms and every fetch but the local
stylesheet and ``data:`` images; the site needs no JavaScript and loads nothing from the network, so it works from
``file://``. Server strings pass through the ``t`` filter (hidden characters made visible) and then through
autoescape; the only ``|safe`` values are the SVG charts, which :mod:`scanner.report.svg` escapes itself.
All links are relative, and no server string is ever put in a URL: server pages are named by slug.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from itertools import chain
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from scanner.check.badge import score_colour
from scanner.errors import OutputError
from scanner.measure.clients import CLIENTS_BY_KEY
from scanner.models import PROVIDER_LABELS, PROVIDER_SHORT
from scanner.report.data import ServerPage, ServerRow, SiteData, TrendPoint
from scanner.report.preview import tag
from scanner.report.svg import NARROW, Series, line_chart, needs_own_scales, small_multiples, stacked_bar_chart
from scanner.report.text import clean_text, plural

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'"
)
TOP_RULES_CHARTED = 8
# Ranked rows shown at once on the leaderboard; the rest wait in a closed <details>, which a browser does not lay
# out: 20 000 rows in one open table took ten times as long to become usable (bench/bench_board_page.py).
BOARD_ROWS = 1000
TREND_TABLE_ROWS = 60
PRE_LIMIT = 400_000


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC") if value is not None else "–"


def _num(value: int | float | None) -> str:
    return "–" if value is None else f"{value:,}"


def _score(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


_TICKS = re.compile(r"`([^`\n]{1,200})`")


def ticks(value: object) -> Markup:
    """Untrusted text with its Markdown code spans (a rule's fix: ```"properties": {}```) shown as ``<code>``,
    everything else escaped: no raw backticks on a page."""
    text = str(escape(clean_text(value, limit=2000)))
    return Markup(_TICKS.sub(r'<code class="inline">\1</code>', text))


def _rule_slug(code: object) -> str:
    """A rule's slug beside its code in the rule filter ("MCP102 description-missing"); "" for a code the
    catalogue does not hold."""
    from scanner.rules import RULES

    rule = RULES.get(str(code))
    return rule.slug if rule is not None else ""


def pre_text(value: object) -> Markup:
    """Untrusted text for a ``<pre>`` block's content: hidden characters shown (``block``), ``&``, ``<`` and ``>``
    escaped. Quotes are left as they are: text content needs no escape for them (attribute values do), and a
    tool list's JSON is mostly quotes (written as ``&#34;`` they were a quarter of a server page's bytes)."""
    text = clean_text(value, limit=PRE_LIMIT, keep_newlines=True)
    return Markup(text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))


def movement_text(row: ServerRow) -> str:
    """``▲ 2``, ``▼ 1``, ``new`` or ``=``: the leaderboard's movement column."""
    if row.movement == "up":
        return f"▲ {row.moved_by}"
    if row.movement == "down":
        return f"▼ {row.moved_by}"
    return "new" if row.movement == "new" else "="


@functools.cache
def make_environment() -> Environment:
    """The Jinja environment: package templates, autoescape for every template, undefined names are errors.

    One per process: its templates are compiled on first use and kept (the site's pages and its registry-health
    page share them, and a second report in the same process does not compile them again)."""
    env = Environment(
        loader=PackageLoader("scanner.report", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["t"] = lambda value: clean_text(value, limit=2000)
    env.filters["client"] = lambda key: CLIENTS_BY_KEY[key].label if key in CLIENTS_BY_KEY else clean_text(key)
    env.filters["provider"] = lambda name: PROVIDER_LABELS.get(name, clean_text(name, limit=100))
    env.filters["provider_short"] = lambda name: PROVIDER_SHORT.get(name, clean_text(name, limit=40))
    env.filters["band"] = score_colour
    env.filters["ticks"] = ticks
    env.filters["block"] = lambda value: clean_text(value, limit=PRE_LIMIT, keep_newlines=True)
    env.filters["pre"] = pre_text
    env.filters["when"] = _when
    env.filters["preview_tag"] = tag  # " [preview: its precision]" after a preview rule's code, shown with --preview
    env.filters["num"] = _num
    env.filters["score"] = _score
    env.filters["pct"] = _pct
    env.filters["movement"] = movement_text
    env.filters["plural"] = plural
    env.filters["rule_slug"] = _rule_slug
    return env


@dataclass(frozen=True)
class Multiples:
    """Small charts shown side by side under one heading (one per series, each on its own scale)."""

    title: str
    panels: tuple[str, ...]


@dataclass(frozen=True)
class Responsive:
    """One chart drawn twice: full width, and for a phone (:data:`scanner.report.svg.NARROW`: legible at 390 px,
    its newest run in view); the stylesheet shows one."""

    wide: str
    narrow: str


Chart = str | Multiples | Responsive


def _line(title: str, labels: Sequence[str], series: list[Series], **options: Any) -> Responsive:
    return Responsive(
        line_chart(title, labels, series, **options),
        line_chart(title, labels, series, box=NARROW, direct_labels=False, **options),
    )


def _rule_name(code: str) -> str:
    from scanner.rules import RULES

    rule = RULES.get(code)
    return f"{code} {rule.slug}{' (preview)' if rule.status == 'preview' else ''}" if rule is not None else code


def _maybe_multiples(
    title: str, labels: Sequence[str], series: list[Series], *, y_label: str, percent: bool = False
) -> Chart:
    """One chart, or small multiples when the series' magnitudes differ tenfold (one would lie flat on zero)."""
    if needs_own_scales(series):
        return Multiples(
            f"{title} (each on its own scale)", tuple(small_multiples(title, labels, series, y_label=y_label))
        )
    return _line(title, labels, series, y_label=y_label, percent=percent)


def trend_charts(trends: tuple[TrendPoint, ...]) -> list[Chart]:
    """The trend charts: problem share, tokens per turn, servers hit per rule (small multiples, one per rule),
    outcomes by kind."""
    labels = [point.label for point in trends]
    charts: list[Chart] = [
        _line(
            "Share of answering servers with at least one problem",
            labels,
            [Series("servers with problems", tuple(point.problem_share for point in trends))],
            y_label="share of servers",
            percent=True,
        ),
        _maybe_multiples(
            "Tokens per turn (dearest provider)",
            labels,
            [
                Series("median", tuple(_opt(point.median_tokens) for point in trends)),
                Series("p90", tuple(_opt(point.p90_tokens) for point in trends)),
            ],
            y_label="tokens",
        ),
    ]
    totals: Counter[str] = Counter()
    for point in trends:
        totals.update(point.findings_by_rule)
    top = [code for code, _ in sorted(totals.items(), key=lambda item: (-item[1], item[0]))[:TOP_RULES_CHARTED]]
    title = f"Servers hit per rule (the {len(top)} most frequent)"
    rules = [
        Series(_rule_name(code), tuple(float(point.findings_by_rule.get(code, 0)) for point in trends)) for code in top
    ]
    charts.append(
        Multiples(title, tuple(small_multiples(title, labels, rules, y_label="servers")))
        if rules
        else line_chart(title, labels, rules, y_label="servers")
    )
    kinds = sorted({kind for point in trends for kind in point.outcomes}, key=lambda kind: (kind != "ok", kind))
    outcomes = [Series(kind, tuple(float(point.outcomes.get(kind, 0)) for point in trends)) for kind in kinds]
    charts.append(
        Responsive(
            stacked_bar_chart("Outcomes by kind", labels, outcomes, y_label="servers"),
            stacked_bar_chart("Outcomes by kind", labels, outcomes, y_label="servers", box=NARROW),
        )
    )
    return charts


def _opt(value: int | None) -> float | None:
    return None if value is None else float(value)


class _AsFloat(dict[int | None, float | None]):
    """``float(value)`` (None stays None) for each distinct value, computed once: ``map(memo.__getitem__, ...)``
    then runs in C, and a history column has few distinct values (a year of 2 000 servers is 730 000 each)."""

    def __missing__(self, value: int | None) -> float | None:
        converted = self[value] = None if value is None else float(value)
        return converted


def _floats(column: Sequence[int | None]) -> tuple[float | None, ...]:
    return tuple(map(_AsFloat().__getitem__, column))


def server_charts(page: ServerPage, providers: tuple[str, ...]) -> list[Chart]:
    """A server's token history (one line per provider) and findings history (one line per severity); none for a
    server that never answered (two empty charts say nothing: its page shows its scans as a table)."""
    history = page.history
    if not history.has_data:
        return []
    tokens = [
        Series(PROVIDER_LABELS.get(provider, provider), _floats(history.tokens.get(provider, ())))
        for provider in providers
    ]
    findings = [
        Series(name, _floats(column))
        for name, column in (
            ("problems", history.problems),
            ("warnings", history.warnings),
            ("notes", history.notes),
        )
    ]
    labels = history.labels
    return [
        _maybe_multiples("Tokens per turn, by provider", labels, tokens, y_label="tokens"),
        _line("Findings over time", labels, findings, y_label="findings"),
    ]


def client_charts(view: Any) -> list[tuple[str, Chart]]:
    """One trend chart per client (scanner.report.clients_view): servers it refuses and servers it drops tools of,
    per run; (client key, chart)."""
    labels = list(view.labels)
    return [
        (
            trend.key,
            _line(
                f"{trend.label}: servers it does not load whole",
                labels,
                [Series("refuses", trend.refuses), Series("drops tools", trend.drops)],
                y_label="servers",
            ),
        )
        for trend in view.trends
    ]


def render_pages(site: SiteData, env: Environment | None = None) -> Iterator[tuple[str, str | Iterable[str]]]:
    """Yield ``(relative path, html)`` for every page of the site, the leaderboard first. The leaderboard's html
    is the template's pieces as it renders them (one per server row and more): written as they come, the page
    is never held whole, nor its rows (read from the board's spool: scanner.report.spool)."""
    env = env or make_environment()
    common: dict[str, Any] = {"board": site.leaderboard, "generated_at": site.generated_at, "csp": CSP}
    yield "index.html", env.get_template("index.html").generate(root="", board_rows=BOARD_ROWS, **common)
    yield (
        "trends.html",
        env.get_template("trends.html").render(
            root="",
            trends=site.trends,
            table=tuple(reversed(site.trends))[:TREND_TABLE_ROWS],
            charts=trend_charts(site.trends),
            **common,
        ),
    )
    yield "rules.html", env.get_template("rules.html").render(root="", rules=site.rules, **common)
    if site.clients is not None:
        yield (
            "clients.html",
            env.get_template("clients.html").render(
                root="", clients=site.clients, charts=client_charts(site.clients), **common
            ),
        )
    server_template = env.get_template("server.html")
    for page in site.servers:
        yield (
            f"servers/{page.row.slug}.html",
            server_template.render(
                root="../",
                row=page.row,
                page=page,
                charts=server_charts(page, site.leaderboard.providers),
                health=site.health.get(page.row.name),
                **common,
            ),
        )


def stylesheet() -> str:
    """The site's one stylesheet."""
    return resources.files("scanner.report").joinpath("templates/style.css").read_text(encoding="utf-8")


def board_script() -> str:
    """The leaderboard's one script (search, filter, sort), served from the site itself."""
    return resources.files("scanner.report").joinpath("templates/board.js").read_text(encoding="utf-8")


def badge_files(row: ServerRow) -> tuple[tuple[str, str], tuple[str, str]]:
    """``(relative path, text)`` of a server's two badges: ``badges/<slug>.svg`` and ``badges/<slug>.json``."""
    import json

    from scanner.check.badge import badge_svg, shields_endpoint

    score = row.score if row.ranked else None
    tokens = max(row.tokens.values()) if row.tokens and row.ranked else None
    empty = row.outcome == "ok" and row.tools_count == 0  # read, and empty: no score, a grey "no tools"
    endpoint = json.dumps(shields_endpoint(score, tokens, no_tools=empty), ensure_ascii=True) + "\n"
    return (f"badges/{row.slug}.svg", badge_svg(score, tokens, no_tools=empty)), (f"badges/{row.slug}.json", endpoint)


def write_site(site: SiteData, out_dir: Path) -> list[str]:
    """Write every HTML page, each server's badges and the stylesheet under ``out_dir``; return the paths written,
    relative to ``out_dir`` and ``/``-separated (a string each: a ``Path`` per file, kept, grew with servers)."""
    (out_dir / "servers").mkdir(parents=True, exist_ok=True)
    (out_dir / "badges").mkdir(parents=True, exist_ok=True)
    written = []
    for name, own in (("style.css", stylesheet()), ("board.js", board_script())):
        path = out_dir / name
        path.write_text(own, encoding="utf-8")
        written.append(name)
    pages: set[str] = set()
    for relative, text in render_pages(site):
        # Slugs are unique per build (text.unique_slugs); this is the last guard: never overwrite a page of this
        # build with another (case folded, as on case-insensitive file systems).
        if relative.casefold() in pages:
            raise OutputError(f"two pages of this report would both be {relative}; refusing to overwrite one")
        pages.add(relative.casefold())
        path = out_dir / relative
        if isinstance(text, str):
            path.write_text(text, encoding="utf-8")
        else:
            with path.open("w", encoding="utf-8") as stream:
                stream.writelines(text)
        written.append(relative)
    for row in chain(site.leaderboard.ranked, site.leaderboard.unranked):
        for relative, text in badge_files(row):
            (out_dir / relative).write_text(text, encoding="utf-8")
            written.append(relative)
    return written
