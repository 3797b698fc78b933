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
