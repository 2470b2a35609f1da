# syntax=docker/dockerfile:1
# mockworld's GPU trainer image: the Temporal worker of the `mockworld-gpu` task queue (default
# command) and the policy server (`python -m mockworld_trainer.policy_server ...`). torch comes
# from PyPI at the trainer's pin, whose Linux wheel is the CUDA build (the CUDA libraries arrive as
# its nvidia-* wheels; the node provides only the driver, through the NVIDIA container toolkit).
# Build from the repository root:
#   docker build -f deploy/docker/trainer.Dockerfile -t mockworld-trainer:$(git rev-parse --short HEAD) .
ARG PYTHON_VERSION=3.11.14

FROM python:${PYTHON_VERSION}-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    MOCKWORLD_CONTRACT_DIR=/opt/mockworld/schemas/json/trainer \
    MOCKWORLD_CHECKPOINT_DIR=/checkpoints \
    MOCKWORLD_METRICS_ADDRESS=0.0.0.0:9464
WORKDIR /opt/mockworld
# The contract the trainer validates every input against (emitted from the TypeScript schemas).
COPY schemas/json/trainer schemas/json/trainer
COPY workers/trainer workers/trainer
# Every dependency is pinned exactly in workers/trainer/pyproject.toml.
RUN pip install --no-cache-dir ./workers/trainer \
 && useradd --create-home --uid 10001 trainer \
 && mkdir /checkpoints \
 && chown trainer /checkpoints
USER 10001
# 9464: the worker's Prometheus metrics (and probe); 11436: the policy server.
EXPOSE 9464 11436
CMD ["python", "-m", "mockworld_trainer.worker"]
