#!/usr/bin/env python3
"""minilm_reference.py MODEL_DIR OUT [--device cpu|cuda]: the reference embeddings of
all-MiniLM-L6-v2 from sentence-transformers (PyTorch), for examples/minilm.c --check. Run once
on the GPU machine (which has sentence-transformers); commit OUT as
tests/models/minilm_embeddings_st.txt (cmake/examples.cmake then prefers it to the numpy one).
float32, TF32 off, batch 1 (no padding), normalize_embeddings=True, max_seq_length 256 (the
model's sentence_bert_config.json). The sentences are those of make_token_fixture.py. The file
starts with a comment holding the command line and the versions that produced it."""
import os
import shlex
import sys

import numpy as np
import sentence_transformers
import torch
from sentence_transformers import SentenceTransformer

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_token_fixture import SENTENCES  # noqa: E402


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    model_dir, out = sys.argv[1], sys.argv[2]
    device = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--device" else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = SentenceTransformer(model_dir, device=device)
    model.max_seq_length = 256
    emb = model.encode(SENTENCES, batch_size=1, normalize_embeddings=True, convert_to_numpy=True)
    emb = np.asarray(emb, dtype=np.float32)
    cmd = "python3 " + " ".join(shlex.quote(a) for a in sys.argv)
    with open(out, "w") as f:
        f.write(f"# all-MiniLM-L6-v2 embeddings from sentence-transformers {sentence_transformers.__version__} "
                f"(torch {torch.__version__}, {device}, float32): {cmd}\n")
        for s, e in zip(SENTENCES, emb):
            f.write((s.encode("utf-8").hex() or "-") + "\t" + " ".join(f"{v:.9g}" for v in e) + "\n")
    print(f"command: {cmd}")
    print(f"wrote {len(SENTENCES)} embeddings to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
