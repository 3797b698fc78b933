"""README.md of a repository: title and abstract when visible, then layout and data dictionary."""

from __future__ import annotations

from isg_gym.repository.index import render_token
from isg_gym.spec.models import Spec, column_kind


def render_readme(spec: Spec, example_path: str) -> str | None:
    """The README text, or None when the Spec hides the README."""
    vis = spec.readme
    if not vis.present:
        return None
    out = [f"# {spec.story.title}" if vis.title else "# Data repository", ""]
    if vis.abstract:
        out += ["## Abstract", "", spec.story.abstract, ""]
    names = {v.key: v.short for v in spec.path_variables}
    out += [
        "## Layout",
        "",
        f"All data files are `.{spec.file_format}` files laid out as "
        f"`{spec.layout.template(spec.file_format, names)}`, for example `{example_path}`.",
        "",
    ]
    for var in spec.path_variables:
        unit = f" [{var.unit}]" if var.unit else ""
        example = render_token(spec, var, var.values[0])
        if var.kind == "date":
            fmt = spec.layout.date_format.replace("%Y", "YYYY").replace("%m", "MM")
            unit = f" [written {fmt.replace('%d', 'DD')}]"
        out.append(f"- `{{{var.short}}}`: {var.label}{unit}, e.g. `{example}`. {var.description}")
    out += ["", "## Columns", "", "| column | type | unit | description |", "|---|---|---|---|"]
    for col in spec.columns:
        kind = col.role if col.role in ("identifier", "datetime") else column_kind(col)
        out.append(f"| {col.name} | {kind} | {col.unit} | {col.description} |")
    return "\n".join(out) + "\n"
