"""The scientific taxonomy (22 fields, 244 domains, 780 subdomains) shipped as package data."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

import numpy as np

from isg_gym.spec.models import TaxonomyTriple

Taxonomy = dict[str, dict[str, dict[str, str]]]


@cache
def load_taxonomy() -> Taxonomy:
    """field (file stem) -> domain -> subdomain -> one-sentence description, sorted."""
    root = resources.files("isg_gym.data.taxonomy")
    out: Taxonomy = {}
    for entry in sorted(root.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".json"):
            data = json.loads(entry.read_text("utf-8"))
            out[entry.name.removesuffix(".json")] = {
                domain: dict(sorted(subs.items())) for domain, subs in sorted(data.items())
            }
    return out


def sample_triple(rng: np.random.Generator) -> TaxonomyTriple:
    """Field, then domain, then subdomain, each uniform over its sorted siblings."""
    taxonomy = load_taxonomy()
    field = sorted(taxonomy)[rng.integers(len(taxonomy))]
    domains = taxonomy[field]
    domain = sorted(domains)[rng.integers(len(domains))]
    subs = domains[domain]
    sub = sorted(subs)[rng.integers(len(subs))]
    return TaxonomyTriple(
        field=field, domain=domain, subdomain=sub, subdomain_description=subs[sub]
    )
