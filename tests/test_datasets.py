from treeattn.data.sst import load_sst
from treeattn.tasks import load_config
from treeattn.tasks.datasets import open_dataset


def phrases(name: str):
    """SST-5 or SST-2 read with every phrase's label."""
    return open_dataset(load_config(None, [f"data.name={name}", "data.phrase_level=true"]).data)


def test_phrase_level_training_uses_every_labeled_node(shared_data):
    trees = load_sst("train", root=shared_data, fine_grained=True)
    nodes = [label for ex in trees for _, _, label in ex.phrase_labels]
    sst5 = open_dataset(
        load_config(None, ["data.name=sst5", "data.phrase_level=true"]).data
    ).load_split("train")
    assert len(sst5) == len(nodes) == 318_582
    sst2 = open_dataset(
        load_config(None, ["data.name=sst2", "data.phrase_level=true"]).data
    ).load_split("train")
    # Polar nodes of every training tree, neutral-rooted sentences included.
    assert len(sst2) == sum(label != 2 for label in nodes) == 98_794
    assert {ex.label for ex in sst2} == {0, 1}
    # Dev and test stay whole sentences.
    dev = open_dataset(
        load_config(None, ["data.name=sst2", "data.phrase_level=true"]).data
    ).load_split("dev")
    assert len(dev) == 872
