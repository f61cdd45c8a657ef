"""A tiny causal language model and tokenizer made on the spot, for wiring tests of the trainers.

Nothing is downloaded: no model hub is reachable from Horizon's machines, and the point of the
tests and examples that use this (TRL's ``SFTTrainer`` and ``GRPOTrainer``, verl's
``RLHFDataset``) is the wiring between Horizon's data and the trainers' own loaders, not learning.

* The tokenizer is a byte-level BPE (Hugging Face ``tokenizers``) trained in well under a second
  on a small built-in corpus, with the special tokens of Qwen3's chat format as single tokens
  (``<|im_start|>``, ``<|im_end|>``, ``<tool_call>``, ``<tool_response>``, ``<think>``...), wrapped in
  ``transformers.PreTrainedTokenizerFast``. Any text tokenises (byte fallback), so Horizon's
  tool schemas, code and observations all encode; sequences are just longer than a real
  vocabulary's.
* Its chat template is TRL's own copy of Qwen3's (``trl/chat_templates/<template>.jinja``,
  default ``qwen3``), byte for byte, so TRL recognises it by identity: ``GRPOTrainer`` parses
  tool calls with Qwen3's response schema, and ``SFTTrainer(assistant_only_loss=True)`` swaps in
  its ``{% generation %}``-tagged training template (``qwen3_training.jinja``).
* The model is a ``Qwen3ForCausalLM`` built from a config (2 layers, hidden size 64; about
  0.1 M parameters beyond the embeddings), randomly initialised with a fixed seed.

Both are saved with ``save_pretrained`` into one folder, which every consumer loads as it would a
hub checkpoint (``AutoTokenizer.from_pretrained(folder)``, ``AutoModelForCausalLM.from_pretrained(folder)``).
Needs the ``train`` extra (transformers, tokenizers, torch, trl); each is imported only here.
"""

from __future__ import annotations

from pathlib import Path

#: Qwen3's special tokens (its ``tokenizer_config.json``), single tokens in the tiny vocabulary.
SPECIAL_TOKENS = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>",
    "<tool_response>", "</tool_response>", "<think>", "</think>", "<tools>", "</tools>",
)

#: Text the byte-level BPE is trained on: the shapes Horizon's rows are made of (chat headers,
#: JSON tool calls and schemas, shell output, Python), enough for merges of common pieces.
_CORPUS = [
    ("system user assistant tool function name arguments description parameters properties type "
     "string integer boolean object array required enum items default minimum maximum"),
    '{"name": "shell", "arguments": {"command": "pytest -q tests/test_app.py"}}',
    ('{"type": "function", "function": {"name": "read_file", "description": "Read a file.", '
     '"parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}'),
    "def main():\n    return 0\n\nif __name__ == '__main__':\n    main()\n",
    "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\nAssertionError\n",
    "1 passed, 2 failed in 0.12s. The fix is in the repository; run the tests to check it.",
    "total revenue net income balance sheet cash flow mesh vertices faces blender scene",
]


def _training_corpus() -> list[str]:
    return _CORPUS * 4 + [" ".join(chr(c) for c in range(32, 127))]


def chat_template(name: str = "qwen3") -> str:
    """TRL's stored copy of a model family's chat template (``trl/chat_templates/<name>.jinja``).

    Raises:
        FileNotFoundError: TRL ships no template of that name (the message lists those it has).
    """
    import trl

    folder = Path(trl.__file__).parent / "chat_templates"
    path = folder / f"{name}.jinja"
    if not path.is_file():
        have = ", ".join(sorted(p.stem for p in folder.glob("*.jinja")))
        raise FileNotFoundError(f"TRL {trl.__version__} has no chat template {name!r}; it has: {have}")
    return path.read_text(encoding="utf-8")


def build_tokenizer(template: str = "qwen3", vocab_size: int = 600):
    """A byte-level BPE tokenizer with Qwen3's special tokens and TRL's copy of the chat template.

    Args:
        template: the name of a template in ``trl/chat_templates`` (``chat_template``).
        vocab_size: the BPE's vocabulary size, special tokens and the 256 byte tokens included.

    Returns:
        a ``transformers.PreTrainedTokenizerFast``: ``eos_token`` ``<|im_end|>``, ``pad_token``
        ``<|endoftext|>``, ``chat_template`` set.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    core.train_from_iterator(_training_corpus(), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        additional_special_tokens=[t for t in SPECIAL_TOKENS if t not in ("<|endoftext|>", "<|im_end|>")],
    )
    tokenizer.chat_template = chat_template(template)
    return tokenizer


def build_tiny_model(folder: Path, *, template: str = "qwen3", seed: int = 0) -> Path:
    """Make and save the tiny tokenizer and a randomly initialised Qwen3 model in ``folder``.

    Args:
        folder: where to save (created; an existing checkpoint there is overwritten).
        template: the chat template's name in ``trl/chat_templates``.
        seed: the seed of the model's initialisation (same seed, same weights).

    Returns:
        ``folder``, which ``AutoTokenizer``/``AutoModelForCausalLM.from_pretrained`` load.
    """
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tokenizer = build_tokenizer(template)
    config = Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=32768,
        tie_word_embeddings=True, bos_token_id=None, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
