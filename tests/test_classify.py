"""Training, the pickle-free model format, prediction and k-fold evaluation.

The tests generate their own small url<TAB>category directory file; they never read the
shared DMOZ corpus.
"""

from __future__ import annotations

import gzip
import json
import random
import zipfile
from pathlib import Path

import numpy as np
import pytest

from pagetrail.cli.main import main
from pagetrail.tools.errors import InvalidURL, ModelMissing
from pagetrail.tools.learning.classify import (
    CANDIDATES_FILE,
    DEFAULT_VARIANT,
    META_FILE,
    MODEL_FILE,
    TrainingDataError,
    build_examples,
    classify_url,
    evaluate,
    load_candidates,
    load_model,
    model_dir,
    read_labelled_urls,
    top_category,
    train,
)

TOPICS = {
    "sports": ["football", "soccer", "tennis", "golf", "hockey", "baseball", "cycling", "rugby"],
    "health": ["clinic", "medical", "dental", "wellness", "therapy", "pharmacy", "nursing",
               "cardio"],
    "computers": ["software", "linux", "coding", "cloud", "network", "hosting", "server",
                  "python"],
}
NEUTRAL = ["best", "city", "world", "online", "hub", "central", "first", "north"]
TLDS = ["com", "org", "net", "co.uk"]


def write_directory_file(path: Path, *, seed: int = 7, per_topic: int = 40) -> Path:
    """A DMOZ-like export: privacy-policy URLs of made-up sites, a few rows per host."""
    rng = random.Random(seed)
    lines = ["# url\tcategory\tbytes"]
    for topic, words in TOPICS.items():
        hosts: set[str] = set()
        while len(hosts) < per_topic:
            a, b = rng.choice(words), rng.choice(NEUTRAL + words)
            pair = [a, b] if rng.random() < 0.5 else [b, a]
            hosts.add(f"{''.join(pair)}{rng.randint(0, 9) if rng.random() < 0.2 else ''}."
                      f"{rng.choice(TLDS)}")
        for host in sorted(hosts):
            prefix = "www." if rng.random() < 0.5 else ""
            lines.append(f"https://{prefix}{host}/privacy-policy\tTop/{topic.title()}/Sub\t100")
            if rng.random() < 0.3:
                lines.append(f"http://{host}/terms-of-service\t{topic}\t90")
    # A shared policy host listed under every topic is ambiguous; an adult row is excluded;
    # an IP-address host and a broken line are skipped.
    lines += [f"https://policyhost.com/privacy\t{t}\t1" for t in TOPICS]
    lines += ["http://naughtygolf.com/privacy\tadult\t1", "http://10.1.2.3/privacy\tsports\t1",
              "not a row"]
    text = "\n".join(lines) + "\n"
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode(), mtime=0))
    else:
        path.write_text(text)
    return path


@pytest.fixture(scope="module")
def data_file(tmp_path_factory) -> Path:
    return write_directory_file(tmp_path_factory.mktemp("dmoz") / "url_category.tsv.gz")


def test_top_category_forms():
    assert top_category("Top/Arts/Movies") == "arts"
    assert top_category("Computers/Software") == "computers"
    assert top_category("health") == "health"
    assert top_category("") == ""


def test_reading_tsv_and_rdf(tmp_path, data_file):
    rows = list(read_labelled_urls(data_file))
    assert ("http://10.1.2.3/privacy", "sports") in rows
    rdf = tmp_path / "content.rdf.u8"
    rdf.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<RDF>\n'
        '<ExternalPage about="http://www.cs.odu.edu/">\n  <d:Title>ODU CS</d:Title>\n'
        "  <topic>Top/Computers/Computer_Science/Academic_Departments</topic>\n"
        "</ExternalPage>\n"
        '<ExternalPage about="http://golf.example/">\n<topic>Top/Sports/Golf</topic>\n'
        "</ExternalPage>\n</RDF>\n"
    )
    assert list(read_labelled_urls(rdf)) == [
        ("http://www.cs.odu.edu/", "computers"), ("http://golf.example/", "sports")]
    # a directory of files works the same way
    assert len(list(read_labelled_urls(tmp_path))) == 2


def test_examples_one_per_host_majority_and_exclusions():
    rows = [
        ("http://www.golfclub.com/privacy", "sports"), ("http://golfclub.com/terms", "sports"),
        ("http://golfclub.com/cookies", "health"),
        ("http://shared.com/p", "sports"), ("http://shared.com/p", "health"),
        ("http://adultsite.com/p", "adult"), ("http://192.168.0.1/p", "sports"),
        ("http://dentalcare.org/privacy", "health"),
    ]
    examples = build_examples(rows)
    assert examples.urls == ["http://dentalcare.org/", "http://golfclub.com/"]
    assert examples.labels == ["health", "sports"]
    assert examples.ambiguous_hosts == 1
    assert examples.hosts_by_category == {"health": ["dentalcare.org"], "sports": ["golfclub.com"]}


def test_no_usable_rows_is_a_named_error(tmp_path):
    empty = tmp_path / "empty.tsv"
    empty.write_text("just text\n")
    with pytest.raises(TrainingDataError):
        train(empty)
    with pytest.raises(TrainingDataError):
        train(tmp_path / "missing.tsv")


def test_model_missing_is_clear_and_cli_says_so(capsys):
    with pytest.raises(ModelMissing, match="classify train"):
        load_model()
    assert main(["classify", "predict", "http://golf.example/"]) == 2
    assert "model_missing" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["nb", "linear"])
def test_train_predict_round_trip(data_file, kind, tmp_path):
    report = train(data_file, kind=kind, directory=tmp_path / "model")
    assert report.examples == 120  # 3 topics × 40 hosts; shared, adult, IP rows left out
    assert report.categories == {"computers": 40, "health": 40, "sports": 40}
    model = load_model(tmp_path / "model")
    # unseen hosts built from each topic's words
    assert model.predict("http://tennisgolfclub.net/").category == "sports"
    assert model.predict("http://dentalwellness.org/").category == "health"
    assert model.predict("https://linuxcloudhosting.io/pricing").category == "computers"
    prediction = model.predict("http://zzqx.example/")
    assert prediction.known_features == 0  # nothing recognised: the answer is only a prior
    assert abs(sum(p for _, p in prediction.ranking) - 1.0) < 1e-3


def test_model_files_are_pickle_free_and_reproducible(data_file, tmp_path):
    first = train(data_file, directory=tmp_path / "a")
    second = train(data_file, directory=tmp_path / "b")
    assert first.model_sha256 == second.model_sha256
    assert (tmp_path / "a" / MODEL_FILE).read_bytes() == (tmp_path / "b" / MODEL_FILE).read_bytes()
    with zipfile.ZipFile(tmp_path / "a" / MODEL_FILE) as archive:
        names = set(archive.namelist())
        assert names <= {"vocabulary.npy", "classes.npy", "coef.npy", "intercept.npy", "idf.npy"}
        for name in names:
            header = archive.read(name)[:128]
            assert header.startswith(b"\x93NUMPY") and b"'O'" not in header  # no object arrays
    with np.load(tmp_path / "a" / MODEL_FILE, allow_pickle=False) as arrays:
        assert arrays["coef"].shape[0] == 3
    meta = json.loads((tmp_path / "a" / META_FILE).read_text())
    assert meta["path"] == "drop" and meta["variant"] == DEFAULT_VARIANT
    candidates = json.loads((tmp_path / "a" / CANDIDATES_FILE).read_text())
    assert sorted(candidates) == ["computers", "health", "sports"]
    assert all(hosts == sorted(hosts) for hosts in candidates.values())


def test_corrupt_model_is_reported_as_missing(data_file, tmp_path):
    train(data_file, directory=tmp_path / "m")
    (tmp_path / "m" / MODEL_FILE).write_bytes(b"not a zip")
    with pytest.raises(ModelMissing, match="unreadable"):
        load_model(tmp_path / "m")


def test_listed_host_uses_the_data_label(data_file, tmp_path):
    train(data_file, directory=tmp_path / "m")
    model, candidates = load_model(tmp_path / "m"), load_candidates(tmp_path / "m")
    listed = candidates["health"][0]
    prediction = classify_url(f"http://www.{listed}/anything", model=model, candidates=candidates)
    assert (prediction.category, prediction.source) == ("health", "ontology")
    unlisted = classify_url("http://golfrugby.example/", model=model, candidates=candidates)
    assert unlisted.source == "classifier"
    with pytest.raises(InvalidURL):
        classify_url("http://x/" + "a" * 20000, model=model)


def test_cli_train_predict_into_data_dir(data_file, capsys):
    assert main(["classify", "train", "--data", str(data_file), "--model", "nb", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert Path(report["directory"]) == model_dir() and (model_dir() / MODEL_FILE).is_file()
    assert main(["classify", "predict", "http://hockeyrugby.ca/", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["category"] == "sports"
    assert main(["classify", "predict", "ftp://nope"]) == 2


def test_kfold_evaluation_reports_each_variant(data_file):
    examples = build_examples(read_labelled_urls(data_file))
    rows = evaluate(examples, variants=["tokens", "allgrams_uri-tld-digits"], kinds=["nb"],
                    folds=3)
    assert [r.variant for r in rows] == ["tokens", "allgrams_uri-tld-digits"]
    for row in rows:
        assert 0.0 <= row.macro_f1 <= 1.0 and row.seconds >= 0
    grams = rows[1]
    assert grams.micro_f1 > 0.6  # topic words sit in the hosts: far above chance (1/3)
    with pytest.raises(TrainingDataError):
        evaluate(examples, variants=["tokens"], kinds=["nb"], folds=50)


def test_cli_eval_prints_table_beside_paper(data_file, capsys):
    code = main(["classify", "eval", "--data", str(data_file), "--folds", "3",
                 "--variants", "allgrams_uri-tld-digits", "--models", "nb,linear"])
    out = capsys.readouterr().out
    assert code == 0
    assert "allgrams_uri-tld-digits" in out and "0.59/0.62/0.61" in out
    assert main(["classify", "eval", "--data", str(data_file), "--variants", "bogus"]) == 2
