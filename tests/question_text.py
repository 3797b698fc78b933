"""Read a question's description from its TEXT alone (for the independent checker).

The grammar is the one the generators render (see ``isg_gym.qa.conditions`` and the templates of
``isg_gym.qa.types``), but the meaning of every phrase lives here, not in the generators: a
template may put the pieces in any order and word the rest freely, while the pieces themselves
(scope, path and row conditions, statistic, test, alpha, Yates' correction, groups, direction,
significant figures, backtick paths) are recognised by their own small grammars:

- scope: ``in the file `PATH` `` | ``across all data files`` | ``across the data files where
  PATH-CONDITIONS``;
- path condition: ``LABEL (path component "SHORT") is TOKEN`` | ``... is one of T1, T2 or T3`` |
  ``... is greater than|less than|at least|at most NUMBER``, joined by `` and ``;
- row conditions: ``using only rows where ROW-CONDITIONS``, each ``"COLUMN" is VALUE`` | ``is not
  VALUE`` | ``is one of V1, V2 or V3`` | ``is between A and B (inclusive)`` | ``is greater
  than|less than|at least|at most NUMBER``, joined by `` and ``; VALUE is ``"label"`` or a number.

:func:`parse` returns the description in the shape of ``Question.params`` (so the two can be
compared key by key) and the significant figures the text asks for. Anything it cannot read,
or reads twice in conflicting ways, raises :class:`CheckError` naming the question and the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

STYLE_PREFIX = {"{name}={val}": "{s}=", "{name}_{val}": "{s}_", "{name}-{val}": "{s}-",
                "{name}{val}": "{s}", "{val}": ""}  # fmt: skip
NUM = r"-?\d+(?:\.\d+)?"
TOKEN = r"[A-Za-z0-9](?:[A-Za-z0-9._=-]*[A-Za-z0-9])?"  # a path value; never ends with a '.'
QUOTED = r'"[^"]*"'
VALUE = rf"(?:{QUOTED}|{NUM})"
COMPARE = {"greater than": "gt", "less than": "lt", "at least": "ge", "at most": "le"}
_CMP = "|".join(COMPARE)
TERMINATORS = ",.?:;"
SUBJECT_RE = re.compile(r'\(path component "([a-z][a-z0-9]*)"\)')
LABEL_CHARS = r'(?:[^,.?:;"`]|\.(?! ))'  # a label may hold a '.' (PM2.5), not a sentence end


class CheckError(Exception):
    """The question cannot be checked as stated (unreadable text, bad params, contract)."""


def _one_of(body: str) -> list[str]:
    """``a, b or c`` -> [a, b, c] (also a single item)."""
    head, sep, last = body.rpartition(" or ")
    return [*head.split(", "), last] if sep else [body]


def _value(text: str) -> str | float:
    return text[1:-1] if text.startswith('"') else float(text)


class Reader:
    """The text of one question, with the spec's path variables to name them by label/short."""

    def __init__(self, qid: str, text: str, spec) -> None:
        self.qid, self.text, self.spec = qid, text, spec
        self.lower = text.lower()

    def fail(self, what: str, at: int | None = None) -> CheckError:
        where = f" at ...{self.text[at:at + 80]!r}" if at is not None else ""
        return CheckError(f"{self.qid}: {what}{where} in text {self.text!r}")

    # --- small pieces -------------------------------------------------------------------------

    def all(self, pattern: str, flags: int = 0) -> list[re.Match[str]]:
        return list(re.finditer(pattern, self.text, flags))

    def unique(self, pattern: str, what: str, flags: int = 0, group: int | str = 1) -> str | None:
        """The value of ``group`` in every match of ``pattern`` (all equal), or None."""
        found = {m.group(group) for m in self.all(pattern, flags)}
        if len(found) > 1:
            raise self.fail(f"conflicting {what}: {sorted(found)}")
        return found.pop() if found else None

    def need(self, pattern: str, what: str, flags: int = 0, group: int | str = 1) -> str:
        value = self.unique(pattern, what, flags, group)
        if value is None:
            raise self.fail(f"no {what} (pattern {pattern!r})")
        return value

    def backticks(self) -> list[str]:
        return re.findall(r"`([^`]*)`", self.text)

    def sig_figs(self, required: bool) -> int | None:
        sig = self.unique(r"\b(\d+) significant figures?\b", "significant figures")
        if required and sig is None:
            raise self.fail("a float answer without a number of significant figures")
        if not required and sig is not None:
            raise self.fail("significant figures asked of a non-float answer")
        return None if sig is None else int(sig)

    # --- path conditions ----------------------------------------------------------------------

    def _variable(self, label: str, short: str):
        for var in self.spec.path_variables:
            if var.short == short and var.label == label:
                return var
        return None

    def _label_before(self, idx: int) -> tuple[int, str]:
        """(start, label) of the variable label that ends just before ``idx`` (a space first)."""
        head = self.text[:idx]
        if not head.endswith(" "):
            raise self.fail("a path component without a label before it", idx)
        known = [v.label for v in self.spec.path_variables if head[:-1].endswith(v.label)]
        if known:
            label = max(known, key=len)
            return idx - 1 - len(label), label
        m = re.search(rf"(?:\bwhere|\bwhich|\band) ((?:(?!\b(?:where|which|and)\b)"
                      rf"{LABEL_CHARS})+) $", head)  # fmt: skip
        if m is None:
            raise self.fail("cannot find where a path variable's label starts", idx)
        return m.start(1), m.group(1)

    def _token(self, var, token: str) -> str:
        """A path value as the text gives it, without its name part (``by=smith`` -> smith)."""
        if var is None:
            return token
        prefix = STYLE_PREFIX[self.spec.layout.style].format(s=var.short)
        if prefix[-1:] in ("=", "_", "-") and token.startswith(prefix) and token != prefix:
            return token[len(prefix) :]
        return token

    def _path_op(self, var, pos: int) -> tuple[dict[str, Any], int]:
        """The op and value of a path condition whose subject ends at ``pos``."""
        text = self.text
        m = re.compile(rf" is one of ({TOKEN}(?:(?:, {TOKEN})* or {TOKEN})?)").match(text, pos)
        if m:
            values = [self._token(var, t) for t in _one_of(m.group(1))]
            return {"op": "is_one_of", "value": values}, m.end()
        m = re.compile(rf" is ({_CMP}) ({NUM})(?![\d])").match(text, pos)
        if m:
            return {"op": COMPARE[m.group(1)], "value": float(m.group(2))}, m.end()
        m = re.compile(rf" is ({TOKEN})").match(text, pos)
        if m:
            return {"op": "is", "value": self._token(var, m.group(1))}, m.end()
        raise self.fail("unreadable path condition", pos)

    def subjects(self) -> list[dict[str, Any]]:
        """Every ``LABEL (path component "SHORT")`` of the text: start, end, label, short, var."""
        out = []
        for m in SUBJECT_RE.finditer(self.text):
            start, label = self._label_before(m.start())
            var = self._variable(label, m.group(1))
            is_condition = self.text.startswith(" is ", m.end())
            out.append({"start": start, "end": m.end(), "label": label, "short": m.group(1),
                        "var": var, "condition": is_condition})  # fmt: skip
        return out

    def path_conditions(self, anchor: Callable[[str], bool]) -> list[dict[str, Any]]:
        """The chain of path conditions (subjects followed by `` is ``), in text order, in the
        shape of ``PathCondition.to_dict()`` (an unknown variable: ``variable`` None plus its
        label and short). ``anchor(text before the first label)`` must accept the lead-in."""
        conds, end = [], None
        for sub in (s for s in self.subjects() if s["condition"]):
            if end is None:
                if not anchor(self.text[: sub["start"]]):
                    raise self.fail("a path condition outside a scope", sub["start"])
            elif self.text[end : sub["start"]] != " and ":
                raise self.fail("path conditions not joined by ' and '", end)
            opval, end = self._path_op(sub["var"], sub["end"])
            if sub["var"] is None:
                head = {"variable": None, "label": sub["label"], "short": sub["short"]}
            else:
                head = {"variable": sub["var"].name}
            conds.append({**head, **opval})
        if end is not None:
            self.after(end, "path conditions")
        return conds

    def after(self, end: int, what: str, allowed: tuple[str, ...] = ()) -> None:
        """The text after ``what`` must end a phrase (punctuation, the end, or ``allowed``)."""
        rest = self.text[end:]
        if rest and rest[0] not in TERMINATORS and not rest.startswith(allowed):
            raise self.fail(f"unparsed text after the {what}", end)

    # --- scope and rows -----------------------------------------------------------------------

    def scope(self) -> dict[str, Any]:
        """``{"scope": "file", "file": ...}`` or ``{"scope": "files", "path_conditions": ...}``."""
        files = self.all(r"\b[Ii]n the file `([^`]*)`")
        everything = self.all(r"\b[Aa]cross all data files\b")
        where = self.all(r"\b[Aa]cross the data files where ")
        if len(files) + len(everything) + len(where) != 1:
            raise self.fail("not exactly one scope (in the file / across all / across where)")
        subjects = [s for s in self.subjects() if s["condition"]]
        if files:
            if subjects:
                raise self.fail("path conditions next to a single-file scope")
            self.after(files[0].end(), "file scope", (" using", ", using"))
            return {"scope": "file", "file": files[0].group(1)}
        if everything:
            if subjects:
                raise self.fail("path conditions next to 'across all data files'")
            return {"scope": "files", "path_conditions": []}
        start = where[0].end()
        conds = self.path_conditions(lambda head: len(head) == start)
        if not conds:
            raise self.fail("'across the data files where' without a path condition", start)
        return {"scope": "files", "path_conditions": conds}

    def row_conditions(self) -> list[dict[str, Any]]:
        """The row conditions after ``using only rows where`` (none if that is absent)."""
        anchors = self.all(r"\busing only rows where ")
        if not anchors:
            return []
        if len(anchors) > 1:
            raise self.fail("several 'using only rows where' phrases")
        text, pos, conds = self.text, anchors[0].end(), []
        patterns = (
            ("ne", re.compile(rf'"([^"]+)" is not ({VALUE})')),
            ("in", re.compile(rf'"([^"]+)" is one of ({VALUE}(?:(?:, {VALUE})* or {VALUE})?)')),
            ("between", re.compile(rf'"([^"]+)" is between ({NUM}) and ({NUM}) \(inclusive\)')),
            ("cmp", re.compile(rf'"([^"]+)" is ({_CMP}) ({NUM})(?![\d])')),
            ("eq", re.compile(rf'"([^"]+)" is ({VALUE})(?![\d])')),
        )
        while True:
            for op, pattern in patterns:
                m = pattern.match(text, pos)
                if m is None:
                    continue
                col = m.group(1)
                if op == "in":
                    items = re.findall(VALUE, m.group(2))
                    cond = {"column": col, "op": "in", "value": [_value(v) for v in items],
                            "high": None}  # fmt: skip
                elif op == "between":
                    cond = {"column": col, "op": "between", "value": float(m.group(2)),
                            "high": float(m.group(3))}  # fmt: skip
                elif op == "cmp":
                    cond = {"column": col, "op": COMPARE[m.group(2)],
                            "value": float(m.group(3)), "high": None}  # fmt: skip
                else:
                    cond = {"column": col, "op": op, "value": _value(m.group(2)), "high": None}
                conds.append(cond)
                pos = m.end()
                break
            else:
                raise self.fail("unreadable row condition", pos)
            if text.startswith(' and "', pos):
                pos += len(" and ")
                continue
            self.after(pos, "row conditions")
            return conds

    def column_with_label(self, m: re.Match[str], group: str = "col") -> tuple[str, int]:
        """The column of a ``"name"`` match, checking an optional `` (label)`` after it."""
        name, end = m.group(group), m.end(group) + 1
        if self.text.startswith(" (", end):
            labels = [v.label for v in [*self.spec.columns, *self.spec.unrecorded]
                      if v.name == name]  # fmt: skip
            if not labels or not self.text.startswith(f" ({labels[0]})", end):
                raise self.fail(f"column {name!r} with a label that is not its own", end)
            end += len(labels[0]) + 3
        return name, end


# --- per question type --------------------------------------------------------------------------

_UNIVARIATE = {
    "mode": r"the most common value of",
    "min": r"the minimum of",
    "max": r"the maximum of",
    "median": r"the median of",
    "mean": r"the mean of",
    "std": r"the standard deviation \(sample, n - 1 denominator\) of",
    "var": r"the variance \(sample, n - 1 denominator\) of",
    "n_distinct": r"the number of distinct values of",
}
COL = r'"(?P<col>[^"]+)"'


def _univariate(r: Reader) -> tuple[dict[str, Any], int | None]:
    found = []
    for stat, phrase in _UNIVARIATE.items():
        for m in re.finditer(rf"\b{phrase} {COL}", r.text):
            found.append((stat, m))
    if len(found) != 1:
        raise r.fail(f"not exactly one statistic phrase: {[s for s, _ in found]}")
    stat, m = found[0]
    # Names and their descriptions ("variance_estimator" (...)) are masked: only the wording of
    # a statistic counts.
    wording = re.sub(r'"[^"]*"(?: \([^)]*\))?', '""', r.text)
    if stat not in ("std", "var") and re.search(r"\b(standard deviation|variance)\b", wording):
        raise r.fail("a standard deviation or variance without its n - 1 denominator")
    column, end = r.column_with_label(m)
    r.after(end, "statistic", (" in the file", " across", ", using only", " using only"))
    desc = {**r.scope(), "column": column, "statistic": stat, "row_conditions": r.row_conditions()}
    if stat == "mode":
        desc["_ties"] = "alphabetical" if re.search(
            r"equally common, give the alphabetically first", r.text) else None  # fmt: skip
    return desc, r.sig_figs(required=stat not in ("mode", "n_distinct"))


_BIVARIATE = {
    "pearson": rf"the Pearson correlation coefficient between {COL} and (?P<y>{QUOTED})",
    "spearman": rf"the Spearman rank correlation coefficient between {COL} and (?P<y>{QUOTED})",
    "ols_slope": rf"the slope of the ordinary least-squares regression of (?P<y>{QUOTED}) on {COL}",
    "chi_square": rf"the chi-square statistic of the test of independence of {COL} and "
    rf"(?P<y>{QUOTED})",
}


def _yates(r: Reader, chi: bool) -> bool | None:
    corr = r.unique(r"\b(with|without) Yates' continuity correction", "Yates' correction")
    if chi and corr is None:
        raise r.fail("a chi-square question that does not say whether Yates' correction applies")
    if not chi and corr is not None:
        raise r.fail("Yates' correction in a question that is not a chi-square test")
    return None if corr is None else corr == "with"


def _both_present(r: Reader, x: str, y: str, pattern: str) -> None:
    pairs = {frozenset((m.group("a"), m.group("b"))) for m in re.finditer(pattern, r.text)}
    if pairs != {frozenset((x, y))}:
        raise r.fail(f"the rule on complete rows does not name exactly {x!r} and {y!r}")


def _bivariate(r: Reader) -> tuple[dict[str, Any], int | None]:
    found = [(s, m) for s, p in _BIVARIATE.items() for m in re.finditer(p, r.text)]
    if len(found) != 1:
        raise r.fail(f"not exactly one bivariate statistic phrase: {[s for s, _ in found]}")
    stat, m = found[0]
    x, y = m.group("col"), m.group("y")[1:-1]
    if stat == "ols_slope":
        eq = r.need(r'\(b in ("[^"]+" = a \+ b \* "[^"]+")\)', "regression equation")
        if eq != f'"{y}" = a + b * "{x}"':
            raise r.fail(f"the regression equation {eq!r} does not match 'of {y} on {x}'")
    _both_present(r, x, y, r'Use only the rows where both "(?P<a>[^"]+)" and "(?P<b>[^"]+)" '
                           r"are present\.")  # fmt: skip
    desc = {**r.scope(), "statistic": stat, "x": x, "y": y, "row_conditions": r.row_conditions()}
    corr = _yates(r, stat == "chi_square")
    if corr is not None:
        desc["correction"] = corr
    return desc, r.sig_figs(required=True)


_METHODS = {
    "pearson": r"the two-sided test of the Pearson correlation coefficient on the rows where "
    r'both "(?P<a>[^"]+)" and "(?P<b>[^"]+)" are present',
    "spearman": r"the two-sided test of the Spearman rank correlation coefficient on the rows "
    r'where both "(?P<a>[^"]+)" and "(?P<b>[^"]+)" are present',
    "chi_square": r"the chi-square test of independence on the contingency table of counts of "
    r'"(?P<a>[^"]+)" and "(?P<b>[^"]+)" \(rows where both are present\)',
    "welch_t": r"Welch's two-sample t-test \(unequal variances, two-sided\), ignoring rows where "
    r'"(?P<a>[^"]+)" is missing',
}
_NULLS = {"pearson": "no correlation", "spearman": "no rank correlation",
          "chi_square": "independence", "welch_t": "equal means"}  # fmt: skip
_FAMILY_WORDS = {"pearson": "Pearson", "spearman": "Spearman", "chi_square": "chi-square",
                 "welch_t": "Welch"}  # fmt: skip
_WELCH_GROUPS = (r'the mean of "(?P<x>[^"]+)" differs? (?:significantly )?between the rows where '
                 r'"(?P<g>[^"]+)" is "(?P<a>[^"]*)" and the rows where "(?P<g2>[^"]+)" is '
                 r'"(?P<b>[^"]*)"')  # fmt: skip


def _hypothesis(r: Reader) -> tuple[dict[str, Any], int | None]:
    found = [(t, m) for t, p in _METHODS.items() for m in re.finditer(p, r.text)]
    if len(found) != 1:
        raise r.fail(f"not exactly one test method: {[t for t, _ in found]}")
    test, m = found[0]
    words = {t for t, w in _FAMILY_WORDS.items() if w in r.text}
    if words != {test}:
        raise r.fail(f"the text names the tests {sorted(words)}, the method is {test}")
    null = r.need(r"null hypothesis of ([a-z ]+?) (?:is rejected|rejected)", "null hypothesis")
    if null != _NULLS[test]:
        raise r.fail(f"null hypothesis {null!r} for the {test} test")
    mentions = re.findall(rf"significance level ({NUM})|\b({NUM}) significance level|p < ({NUM})",
                          r.text)
    alphas = {float(v) for groups in mentions for v in groups if v}
    if len(alphas) != 1:
        raise r.fail(f"not exactly one significance level: {sorted(alphas)}")
    if not re.search(r"\bAnswer yes\b.*\bp < ", r.text):
        raise r.fail("no 'Answer yes ... (p < alpha)' rule")
    desc: dict[str, Any] = {**r.scope(), "test": test, "alpha": alphas.pop(),
                            "row_conditions": r.row_conditions()}  # fmt: skip
    if test == "welch_t":
        groups = r.all(_WELCH_GROUPS)
        got = {(g["x"], g["g"], g["g2"], g["a"], g["b"]) for g in groups}
        if len(got) != 1:
            raise r.fail("not exactly one statement of the two Welch groups")
        x, g, g2, a, b = got.pop()
        if g != g2 or x != m.group("a"):
            raise r.fail(f"Welch groups over {g!r} / {g2!r} of {x!r}, method on {m.group('a')!r}")
        desc |= {"column": x, "group_column": g, "group_a": a, "group_b": b}
    else:
        x, y = m.group("a"), m.group("b")
        desc |= {"x": x, "y": y}
        if test == "chi_square":
            desc["correction"] = _yates(r, True)
    if test != "chi_square":
        _yates(r, False)
    return desc, r.sig_figs(required=False)


_GROUP_LEADS = r"(?:which value of|the values of|group the rows by|[Gg]rouping by) "


def _group_comparison(r: Reader) -> tuple[dict[str, Any], int | None]:
    by_column = {m.group(1) for m in re.finditer(_GROUP_LEADS + r'"([^"]+)"', r.text)}
    by_path = [s for s in r.subjects() if not s["condition"]]
    if len(by_column) + len(by_path) != 1:
        raise r.fail("not exactly one grouping (a column or a path variable)")
    if by_path:
        sub = by_path[0]
        if sub["var"] is None:
            raise r.fail(f"grouping by an unknown path variable {sub['label']!r}")
        group_kind, group_by = "path", sub["var"].name
        prefix = STYLE_PREFIX[r.spec.layout.style].format(s=sub["var"].short)
    else:
        group_kind, group_by, prefix = "column", by_column.pop(), None
    column = r.need(r'\b(?:mean|average) (?:of )?"([^"]+)"', "target column")
    direction = r.need(r"\b(highest|lowest)\b", "direction")
    desc = {**r.scope(), "column": column, "group_by": group_by, "group_kind": group_kind,
            "direction": direction, "row_conditions": r.row_conditions(),
            "_answer_prefix": prefix}  # fmt: skip
    return desc, r.sig_figs(required=False)


def _has_readme(r: Reader) -> tuple[dict[str, Any], int | None]:
    spans = r.backticks()
    if not spans:
        if "README" not in r.text:
            raise r.fail("a has_readme question naming neither README nor an entry")
        return {"directory": "", "entry": "README.md"}, r.sig_figs(required=False)
    entry = r.unique(r"(?:named|called) `([^`]*)`", "entry")
    if len(spans) != 2 or entry is None:
        raise r.fail("an entry question without exactly a directory and a named entry")
    directory = next(s for s in spans if s != entry) if spans.count(entry) == 1 else entry
    if not directory.endswith("/"):
        raise r.fail(f"directory {directory!r} without its trailing '/'")
    return {"directory": directory.rstrip("/"), "entry": entry}, r.sig_figs(required=False)


def _file_extension(r: Reader) -> tuple[dict[str, Any], int | None]:
    spans = r.backticks()
    if len(spans) > 1:
        raise r.fail("several directories in a file-extension question")
    directory = spans[0] if spans else ""
    if spans and not directory.endswith("/"):
        raise r.fail(f"directory {directory!r} without its trailing '/'")
    return {"directory": directory.rstrip("/")}, r.sig_figs(required=False)


def _count_prefix(r: Reader) -> tuple[dict[str, Any], int | None]:
    spans = r.backticks()
    if len(spans) != 1:
        raise r.fail("not exactly one prefix")
    prefix = spans[0]
    return {"prefix": prefix, "directory": prefix.rpartition("/")[0]}, r.sig_figs(required=False)


def _count_files(r: Reader) -> tuple[dict[str, Any], int | None]:
    conds = r.path_conditions(lambda head: head.endswith(("where ", "which ")))
    return {"path_conditions": conds}, r.sig_figs(required=False)


def _one_file(r: Reader) -> str:
    spans = r.backticks()
    if len(spans) != 1:
        raise r.fail("not exactly one file")
    return spans[0]


def _count_rows(r: Reader) -> tuple[dict[str, Any], int | None]:
    return {"file": _one_file(r)}, r.sig_figs(required=False)


def _count_missing(r: Reader) -> tuple[dict[str, Any], int | None]:
    column = r.need(r'\bcolumn "([^"]+)"', "column")
    return {"file": _one_file(r), "column": column}, r.sig_figs(required=False)


def _readme_field(word: str) -> Callable[[Reader], tuple[dict[str, Any], int | None]]:
    def parse(r: Reader) -> tuple[dict[str, Any], int | None]:
        if word not in r.lower or "readme" not in r.lower:
            raise r.fail(f"a {word} question that does not ask for the README's {word}")
        return {}, r.sig_figs(required=False)

    return parse


PARSERS: dict[str, Callable[[Reader], tuple[dict[str, Any], int | None]]] = {
    "has_readme": _has_readme,
    "title": _readme_field("title"),
    "abstract": _readme_field("abstract"),
    "file_extension": _file_extension,
    "count_prefix": _count_prefix,
    "count_files": _count_files,
    "count_rows": _count_rows,
    "count_missing": _count_missing,
    "univariate_statistic": _univariate,
    "bivariate_statistic": _bivariate,
    "hypothesis_test": _hypothesis,
    "group_comparison": _group_comparison,
}


def parse(question, spec) -> tuple[dict[str, Any], int | None]:
    """(description in the shape of ``question.params``, significant figures asked) read from
    ``question.text``; raises :class:`CheckError` when the text cannot be read."""
    if question.type not in PARSERS:
        raise CheckError(f"{question.id}: no text parser for the question type {question.type!r}")
    return PARSERS[question.type](Reader(question.id, question.text, spec))


# --- text against params ------------------------------------------------------------------------


def differences(parsed: Any, params: Any, path: str = "params") -> list[str]:
    """Where the description read from the text and ``params`` disagree (numbers compare as
    floats, exactly: the params must hold the printed value)."""
    if isinstance(parsed, dict) and isinstance(params, dict):
        out = []
        for key in sorted(set(parsed) | set(params), key=str):
            if str(key).startswith("_"):
                continue  # what only the text says (e.g. the tie rule of a mode)
            if key not in params:
                if parsed[key] is not None:
                    out.append(f"{path}.{key}: text says {parsed[key]!r}, params lack it")
            elif key not in parsed:
                out.append(f"{path}.{key}: params say {params[key]!r}, the text does not")
            else:
                out += differences(parsed[key], params[key], f"{path}.{key}")
        return out
    if isinstance(parsed, list | tuple) and isinstance(params, list | tuple):
        if len(parsed) != len(params):
            return [f"{path}: text has {len(parsed)} items {parsed!r}, params {params!r}"]
        return [d for i, (a, b) in enumerate(zip(parsed, params, strict=True))
                for d in differences(a, b, f"{path}[{i}]")]  # fmt: skip
    numeric = (int, float)
    if isinstance(parsed, bool) or isinstance(params, bool):
        same = parsed is params
    elif isinstance(parsed, numeric) and isinstance(params, numeric):
        same = float(parsed) == float(params)
    else:
        same = type(parsed) is type(params) and parsed == params
    return [] if same else [f"{path}: text says {parsed!r}, params {params!r}"]
