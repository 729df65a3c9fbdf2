"""Tiny Stable Diffusion pipelines with random weights, built offline from configs.

Nothing is downloaded: the UNet, VAE and CLIP text encoder are built from
small configs with a fixed torch seed, and the CLIP tokenizer from a
vocabulary of single letters written next to it (with an explicit
``model_max_length``; without it transformers uses 1e30 and the text
encoder overflows). The VAE has four blocks, so its scale factor is 8 as in
real Stable Diffusion: a 512x512 sample runs on 64x64 latents.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["build_tiny_sd", "MAX_LENGTH"]

MAX_LENGTH = 32  # tokens; the prompts are cut to this length


def _tokenizer(root: Path):
    from transformers import CLIPTokenizer

    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1, "!": 2}
    for ch in "abcdefghijklmnopqrstuvwxyz0123456789":
        vocab[ch] = len(vocab)
        vocab[ch + "</w>"] = len(vocab)
    root.mkdir(parents=True, exist_ok=True)
    (root / "vocab.json").write_text(json.dumps(vocab))
    (root / "merges.txt").write_text("#version: 0.2\n")
    return CLIPTokenizer(str(root / "vocab.json"), str(root / "merges.txt"), model_max_length=MAX_LENGTH)


def build_tiny_sd(root, *, kind: str = "text2image", seed: int = 0) -> Path:
    """Save a tiny random pipeline under ``root/tiny-<kind>`` and return that folder.

    Parameters
    ----------
    root : path-like
        Scratch directory.
    kind : {"text2image", "inpaint", "inpaint-only"}
        ``StableDiffusionPipeline``; ``StableDiffusionInpaintPipeline`` with
        the same 4-channel UNet; or an inpainting checkpoint whose UNet
        takes 9 channels (latents, mask, masked image), which cannot draw
        from text alone.
    seed : int
        torch seed for the random weights.
    """
    import torch
    from diffusers import (AutoencoderKL, DDIMScheduler, StableDiffusionInpaintPipeline,
                           StableDiffusionPipeline, UNet2DConditionModel)
    from transformers import CLIPTextConfig, CLIPTextModel

    root = Path(root)
    torch.manual_seed(seed)
    unet = UNet2DConditionModel(
        block_out_channels=(8, 16), layers_per_block=1, sample_size=8,
        in_channels=9 if kind == "inpaint-only" else 4, out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=16,
        norm_num_groups=4, attention_head_dim=2,
    )
    vae = AutoencoderKL(
        block_out_channels=(4, 4, 8, 8), in_channels=3, out_channels=3, latent_channels=4,
        down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4,
        norm_num_groups=4, layers_per_block=1,
    )
    tokenizer = _tokenizer(root / f"tok-{kind}")
    text_encoder = CLIPTextModel(CLIPTextConfig(
        bos_token_id=0, eos_token_id=1, pad_token_id=1, hidden_size=16, intermediate_size=16,
        num_attention_heads=2, num_hidden_layers=1, vocab_size=len(tokenizer.get_vocab()),
        projection_dim=16, max_position_embeddings=MAX_LENGTH,
    ))
    cls = StableDiffusionPipeline if kind == "text2image" else StableDiffusionInpaintPipeline
    pipe = cls(
        unet=unet, vae=vae, text_encoder=text_encoder, tokenizer=tokenizer,
        scheduler=DDIMScheduler(steps_offset=1, clip_sample=False), safety_checker=None, feature_extractor=None,
        requires_safety_checker=False,
    )
    path = root / f"tiny-{kind}"
    pipe.save_pretrained(path)
    return path
