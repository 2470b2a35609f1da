# syntax=docker/dockerfile:1
# mockworld's verl image: verl 0.9.1 with mockworld's verl adapter (integrations/verl), where verl's
# GRPO trainer runs on a mockworld world (docs/verl.md). The
# rollouts reach the world service at MOCKWORLD_WORLD_URL (with MOCKWORLD_WORLD_AUTH beyond
# localhost), set when the container starts, never baked in. verl's pins are those of
# deploy/verl-requirements.txt; torch from PyPI at that pin is the CUDA build on Linux. The rollout
# engine (vLLM or SGLang at the version verl 0.9.1 supports) is the cluster's choice: build FROM
# this image and add it, or pass a verl base image that has it as BASE_IMAGE.
# Build from the repository root:
#   docker build -f deploy/docker/verl-adapter.Dockerfile -t mockworld-verl:$(git rev-parse --short HEAD) .
ARG BASE_IMAGE=python:3.11.14-slim-bookworm

FROM ${BASE_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /opt/mockworld
COPY deploy/verl-requirements.txt deploy/verl-requirements.txt
COPY integrations/verl integrations/verl
# verl's pins, then the adapter itself (not editable, without its test extra). The adapter's YAML
# files stay at integrations/verl/mockworld_verl/config/, the paths the launch overrides name
# relative to this working directory.
RUN grep -v '^-e ' deploy/verl-requirements.txt > /tmp/verl-pins.txt \
 && pip install --no-cache-dir -r /tmp/verl-pins.txt ./integrations/verl \
 && rm /tmp/verl-pins.txt \
 && useradd --create-home --uid 10001 verl
USER 10001
ENTRYPOINT ["python", "-m", "verl.trainer.main_ppo"]
