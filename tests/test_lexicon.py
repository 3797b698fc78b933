import pytest

from isg_gym.simulator.lexicon import load_lexicon
from isg_gym.simulator.taxonomy import load_taxonomy

FIELDS = sorted(load_taxonomy())


def test_taxonomy_counts():
    taxonomy = load_taxonomy()
    assert len(taxonomy) == 22
    assert sum(len(d) for d in taxonomy.values()) == 244
    subs = [s for d in taxonomy.values() for x in d.values() for s in x.items()]
    assert len(subs) == 780 and all(desc.strip() for _, desc in subs)


@pytest.mark.parametrize("field", FIELDS)
def test_every_field_has_a_valid_lexicon_covering_its_domains(field):
    lex = load_lexicon(field)  # validation checks schema, references and coverage
    assert lex.field == field and len(lex.archetypes) >= 3
    covered = {d for a in lex.archetypes for d in a.domains}
    assert covered == set(load_taxonomy()[field])


def test_documented_example_archetype_is_valid():
    import json
    from importlib import resources

    from isg_gym.simulator.lexicon import Archetype

    text = resources.files("isg_gym.data.lexicon").joinpath("_example_archetype.json").read_text()
    assert Archetype.model_validate(json.loads(text)).id == "stat_randomized_block_trial"


def test_every_subdomain_is_served_with_its_own_vocabulary():
    """All 780 subdomains have archetypes, each adapted to the subdomain's vocabulary."""
    from isg_gym.simulator.lexicon import (
        Archetype,
        load_subdomains,
        subdomain_archetypes,
        subdomain_slug,
    )

    served = 0
    for field, domains in load_taxonomy().items():
        vocabulary = load_subdomains(field).domains
        for domain, subdomains in domains.items():
            for sub in subdomains:
                archetypes = subdomain_archetypes(field, domain, sub)
                own = vocabulary[domain][sub]
                assert archetypes, (field, sub)
                for arch in archetypes:
                    assert arch.id.endswith("/" + subdomain_slug(sub))
                    assert arch.topics == own.topics and arch.methods == own.methods
                    names = {v.name for v in arch.independent}
                    assert {v.name for v in own.variables} <= names
                    # built as a copy: it passes the full validation of an archetype too
                    assert Archetype.model_validate(arch.model_dump()) == arch
                served += 1
    assert served == 780


def test_subdomain_vocabulary_rejects_clashes_and_unknown_names():
    import json
    from importlib import resources

    from pydantic import ValidationError

    from isg_gym.simulator.lexicon import FieldSubdomains

    text = resources.files("isg_gym.data.lexicon").joinpath("natural_physics.subdomains.json")
    data = json.loads(text.read_text("utf-8"))
    domain, sub = "Quantum Information and Technologies", "Quantum Computing Experiments"

    def edited(change) -> dict:
        copy = json.loads(json.dumps(data))
        change(copy["domains"][domain][sub])
        return copy

    clash = edited(lambda v: v["variables"][0].update(name="t1_time"))  # an archetype dependent
    with pytest.raises(ValidationError, match="duplicate variable names"):
        FieldSubdomains.model_validate(clash)
    braces = edited(lambda v: v["topics"].__setitem__(0, "{focus} devices"))
    with pytest.raises(ValidationError, match="phrase"):
        FieldSubdomains.model_validate(braces)
    unknown = {**data, "domains": {domain: {"Qubits": data["domains"][domain][sub]}}}
    with pytest.raises(ValidationError, match="unknown subdomain 'Qubits'"):
        FieldSubdomains.model_validate(unknown)


def test_loaded_models_share_equal_fields_sets_and_stay_independent():
    """Each loaded model's ``model_fields_set`` is what validation gave it, held in one set
    object per distinct value (memory); a ``model_copy`` with an update changes no other
    model's set."""
    from importlib import resources

    from pydantic import BaseModel

    from isg_gym.simulator.lexicon import FieldLexicon

    field = "natural_physics"
    text = resources.files("isg_gym.data.lexicon").joinpath(f"{field}.json").read_text()
    fresh, loaded = FieldLexicon.model_validate_json(text), load_lexicon(field)

    def models(root):
        stack, out = [root], []
        while stack:
            item = stack.pop()
            if isinstance(item, BaseModel):
                out.append(item)
                stack.extend(reversed(list(item.__dict__.values())))
            elif isinstance(item, list | tuple):
                stack.extend(reversed(item))
        return out

    pairs = list(zip(models(fresh), models(loaded), strict=True))
    assert len(pairs) > 300
    assert all(a.model_fields_set == b.model_fields_set for a, b in pairs)
    assert len({id(b.model_fields_set) for _, b in pairs}) < len(pairs) // 10
    dist = loaded.archetypes[0].independent[-1]
    before = {id(m): set(m.model_fields_set) for _, m in pairs}
    copy = dist.model_copy(update={"unit": "x", "label": "a label"})
    assert {"unit", "label"} <= copy.model_fields_set
    assert all(m.model_fields_set == before[id(m)] for _, m in pairs)
