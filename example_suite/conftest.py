"""Acme Studio's obedience suite: shared set-up.

Which model is tested
---------------------
``pyproject.toml`` sets ``violin_model = "oracle"`` (renders the exact
answer: every test passes, nothing is downloaded). Point the same tests at a
real model on the command line::

    pytest --violin-model=https://images.internal.acme.dev/v1/generate \\
           --violin-header='Authorization: Bearer ${ACME_IMAGES_TOKEN}' \\
           --violin-response-path=data.0.b64_json

    pytest --violin-model=python:acme_pipeline:generate

The second form imports ``generate`` from ``acme_pipeline.py`` next to this
file. A minimal version of that module, wrapping a local diffusers pipeline
(uncomment it into ``acme_pipeline.py``)::

    # import torch
    # from diffusers import AutoPipelineForText2Image
    #
    # _pipe = None
    #
    # def generate(request):
    #     # request: prompt, width, height, seed, sample_id, task, images
    #     global _pipe
    #     if _pipe is None:
    #         _pipe = AutoPipelineForText2Image.from_pretrained(
    #             "stabilityai/sdxl-turbo", torch_dtype=torch.float16).to("cuda")
    #     generator = torch.Generator("cuda").manual_seed(request.seed)
    #     return _pipe(request.prompt, width=request.width, height=request.height,
    #                  num_inference_steps=4, guidance_scale=0.0,
    #                  generator=generator).images[0]   # a PIL image is fine

Hypothesis
----------
Property tests run under the ``violin`` hypothesis profile (no deadline, 10
examples, the too-slow health check off, failures kept in
``.hypothesis/`` and replayed first on the next run). Pick another profile
with ``--hypothesis-profile=NAME``.
"""

from __future__ import annotations

import os

from hypothesis import settings

from pytest_violin.hypothesis_profiles import register_profiles

register_profiles()
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "violin"))
