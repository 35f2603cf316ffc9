"""`sleuth cos train` checks its options before any training file is read, refuses options that do not apply, and
refuses a file given as 2WikiMultihopQA that is not in its format."""

from __future__ import annotations

import pytest

from tests.cli_support import one_line_error


@pytest.mark.parametrize("args, message", [
    (["--variant", "bogus"], "unknown expert variant 'bogus': use one of attention, ffn, none, lora"),
    (["--pooling", "bogus"], "unknown pooling 'bogus': use one of cls, mean"),
    (["--expert-layer", "99"], "expert layer 99 is out of range: the backbone has 6 layers"),
    (["--variant", "lora", "--frozen-expert", "9"], "lora frozen expert 9 is out of range: the model has 6 experts"),
    (["--nq-split", "bogus"], "--nq-split chooses the --nq-questions used: give --nq-questions and --nq-corpus"),
    (["--nq-split", "dev"], "--nq-split chooses the --nq-questions used: give --nq-questions and --nq-corpus"),
    # before: ignored, the saved model trained with its own architecture / the attention experts without LoRA
    (["--model", "cos-minilm-lora", "--variant", "ffn", "--pooling", "mean"],
     "--model cos-minilm-lora trains a saved model further, with its own experts and pooling: --variant and "
     "--pooling do not apply"),
    (["--lora-rank", "4", "--lora-alpha", "8"], "--variant attention has no LoRA experts: --lora-rank and "
                                                 "--lora-alpha do not apply"),
    # before: a rank-100000 adapter of every expert was allocated (gigabytes) before training began
    (["--variant", "lora", "--lora-rank", "100000"], "--lora-rank 100000: the backbone 'minilm' has 384 hidden units, "
                                                     "and a LoRA rank above them adds nothing; give --lora-rank 384 "
                                                     "or less (4 to 64 is usual)"),
])
def test_model_and_nq_options_are_checked_before_the_data_is_read(args, message, tmp_path, sleuth):
    """Before: the architecture options were checked only when the model was built, after every training file had
    been read ("examples: {...}" printed first; here the broken file was reported instead), and --nq-split without
    --nq-questions was ignored (exit 0, even for an unknown split)."""
    broken = tmp_path / "broken.json"
    broken.write_text("[{", encoding="utf-8")
    err = one_line_error(sleuth("cos", "train", "--hotpotqa", str(broken), *args, "--out", str(tmp_path / "m")))
    assert err == f"error: {message}"


def test_an_unknown_nq_split_is_named_before_the_data_is_read(data_dir, tmp_path, sleuth):
    """Before: the split was checked only when the NQ examples were built, after the other training files were read
    (here the broken file was reported instead)."""
    broken = tmp_path / "broken.json"
    broken.write_text("[{", encoding="utf-8")
    err = one_line_error(sleuth("cos", "train", "--hotpotqa", broken, "--nq-questions",
                                data_dir / "nq" / "questions.jsonl", "--nq-corpus", data_dir / "nq" / "corpus.jsonl",
                                "--nq-split", "bogus", "--out", tmp_path / "m"))
    assert err == "error: --nq-split must be one of all, train, dev, got 'bogus'"


def test_a_hotpotqa_file_given_as_twowiki_is_refused(data_dir, tmp_path, sleuth):
    """Before: exit 0; the HotpotQA questions (no evidences) trained as source '2wiki' with HotpotQA's hop orders,
    and cos_training.json recorded 2wiki."""
    hotpot = data_dir / "hotpotqa" / "hotpot_dev_distractor_100.json"
    err = one_line_error(sleuth("cos", "train", "--twowiki", str(hotpot), "--max-steps", "1", "--batch-size", "2",
                                "--max-length", "32", "--threads", "1", "--out", str(tmp_path / "m")))
    assert err == (f"error: {hotpot}[0]: field 'evidences': missing (a 2WikiMultihopQA file has evidences: is this a "
                   "HotpotQA file? use --hotpotqa)")
    assert not (tmp_path / "m").exists()


def test_the_real_twowiki_files_pass(data_dir):
    from sleuth.systems.chain_of_skills.train_cli import check_twowiki

    for name in ("2wiki_train_more.json", "2wiki_dev.json"):
        check_twowiki(data_dir / "2wikimultihopqa" / name)
