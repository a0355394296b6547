#!/usr/bin/env python3
"""Independent float64 reference for quarry's embedder (server/crates/encoder/src/embed.rs).

Computes sentence-transformers all-MiniLM-L6-v2 embeddings with nothing but
numpy and the Python standard library:

* reads model.safetensors by parsing its header itself (8-byte little-endian
  header length, JSON header, raw little-endian tensors);
* tokenizes with its own BERT basic tokenizer (clean text, space around CJK
  ideographs, lowercase, strip accents, split whitespace and punctuation)
  and greedy longest-match WordPiece over the vocabulary in tokenizer.json,
  then adds [CLS] ... [SEP] and truncates to MAX_TOKENS;
* runs the BERT encoder in float64 (exact erf GELU, LayerNorm eps from
  config.json), mean-pools over all tokens (a single unpadded sequence, so
  the attention mask is all ones) and L2-normalises.

Usage: reference.py MODEL_DIR > reference.json
"""

import hashlib
import json
import math
import struct
import sys
import unicodedata

import numpy as np

MAX_TOKENS = 256

CASES = [
    ("rust_signature", "fn lookup(&self, id: NodeId) -> Option<Node>"),
    (
        "python_def_docstring",
        'def retry_request(session, url, attempts=3, backoff=0.5):\n'
        '    """Send a GET request, retrying failed attempts with exponential backoff.\n'
        '\n'
        '    Returns the response, or raises the last error when every attempt fails.\n'
        '    """\n'
        '    for attempt in range(attempts):\n'
        '        try:\n'
        '            return session.get(url, timeout=10)\n'
        '        except ConnectionError:\n'
        '            if attempt == attempts - 1:\n'
        '                raise\n'
        '            time.sleep(backoff * 2 ** attempt)\n',
    ),
    (
        "typescript_class",
        "export class LruCache<K, V> {\n"
        "  private readonly entries = new Map<K, V>();\n"
        "  constructor(private readonly capacity: number) {}\n"
        "\n"
        "  get(key: K): V | undefined {\n"
        "    const value = this.entries.get(key);\n"
        "    if (value !== undefined) {\n"
        "      this.entries.delete(key);\n"
        "      this.entries.set(key, value);\n"
        "    }\n"
        "    return value;\n"
        "  }\n"
        "}\n",
    ),
    (
        "long_rust_body",
        "/// Applies a batch of edits to the graph store, rebuilding the adjacency\n"
        "/// lists of every node whose edges changed and notifying subscribers.\n"
        "pub fn apply_batch(&mut self, batch: EditBatch) -> Result<ApplyStats, StoreError> {\n"
        "    let mut stats = ApplyStats::default();\n"
        "    let mut touched: HashSet<NodeId> = HashSet::new();\n"
        "    let guard = self.inner.lock().map_err(|_| StoreError::Poisoned)?;\n"
        "    for edit in batch.edits {\n"
        "        match edit {\n"
        "            Edit::AddNode { id, label, props } => {\n"
        "                if guard.nodes.contains_key(&id) {\n"
        "                    return Err(StoreError::DuplicateNode(id));\n"
        "                }\n"
        "                guard.nodes.insert(id, Node::new(label, props));\n"
        "                stats.nodes_added += 1;\n"
        "            }\n"
        "            Edit::AddEdge { from, to, weight } => {\n"
        "                let source = guard.nodes.get_mut(&from).ok_or(StoreError::MissingNode(from))?;\n"
        "                source.edges.insert(to, weight);\n"
        "                touched.insert(from);\n"
        "                touched.insert(to);\n"
        "                stats.edges_added += 1;\n"
        "            }\n"
        "        }\n"
        "    }\n"
        "    for id in &touched {\n"
        "        guard.rebuild_adjacency(*id);\n"
        "    }\n"
        "    drop(guard);\n"
        "    self.subscribers.notify_all(&touched);\n"
        "    stats.touched = touched.len();\n"
        "    Ok(stats)\n"
        "}\n",
    ),
    ("query_retry", "where do we retry failed requests?"),
    ("query_mutex", "graph store mutex poisoned"),
    ("query_accents", "Café naïve résumé: ÜBER-parse the JSON_config (v2.0)!"),
    ("empty", ""),
    ("go_func", "func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) {\n\tq := r.URL.Query().Get(\"q\")\n\thits, err := s.index.Search(q, 20)\n\tif err != nil {\n\t\thttp.Error(w, err.Error(), 500)\n\t\treturn\n\t}\n\tjson.NewEncoder(w).Encode(hits)\n}"),
]


# ---------------------------------------------------------------------------
# safetensors


def read_safetensors(path):
    dtypes = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I64": "<i8", "I32": "<i4"}
    with open(path, "rb") as f:
        data = f.read()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_len])
    base = 8 + header_len
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        array = np.frombuffer(data[base + start : base + end], dtype=dtypes[info["dtype"]])
        tensors[name] = array.reshape(info["shape"]).astype(np.float64)
    return tensors


# ---------------------------------------------------------------------------
# tokenizer


def is_whitespace(ch):
    if ch in " \t\n\r":
        return True
    return unicodedata.category(ch) == "Zs"


def is_control(ch):
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch).startswith("C")


def is_punctuation(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def is_cjk(cp):
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B920 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


def basic_tokenize(text):
    cleaned = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or is_control(ch):
            continue
        if is_whitespace(ch):
            cleaned.append(" ")
        elif is_cjk(cp):
            cleaned.append(" " + ch + " ")
        else:
            cleaned.append(ch)
    text = "".join(cleaned)
    text = unicodedata.normalize("NFD", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Mn")
    text = text.lower()
    words = []
    for word in text.split():
        current = ""
        for ch in word:
            if is_punctuation(ch):
                if current:
                    words.append(current)
                    current = ""
                words.append(ch)
            else:
                current += ch
        if current:
            words.append(current)
    return words


def wordpiece(word, vocab, unk="[UNK]", max_chars=100):
    if len(word) > max_chars:
        return [vocab[unk]]
    pieces = []
    start = 0
    while start < len(word):
        end = len(word)
        found = None
        while start < end:
            piece = word[start:end]
            if start > 0:
                piece = "##" + piece
            if piece in vocab:
                found = vocab[piece]
                break
            end -= 1
        if found is None:
            return [vocab[unk]]
        pieces.append(found)
        start = end
    return pieces


def tokenize(text, vocab):
    """Returns (ids truncated to MAX_TOKENS with [CLS]/[SEP], untruncated count)."""
    body = []
    for word in basic_tokenize(text):
        body.extend(wordpiece(word, vocab))
    full = len(body) + 2
    body = body[: MAX_TOKENS - 2]
    return [vocab["[CLS]"]] + body + [vocab["[SEP]"]], full


# ---------------------------------------------------------------------------
# BERT forward, float64

_erf = np.frompyfunc(math.erf, 1, 1)


def gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def layer_norm(x, weight, bias, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def linear(x, w, prefix):
    return x @ w[prefix + ".weight"].T + w[prefix + ".bias"]


def embed(ids, w, config):
    n = len(ids)
    eps = config["layer_norm_eps"]
    heads = config["num_attention_heads"]
    hidden = config["hidden_size"]
    head_dim = hidden // heads
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    for layer in range(config["num_hidden_layers"]):
        p = "encoder.layer.%d." % layer

        def split(t):
            return t.reshape(n, heads, head_dim).transpose(1, 0, 2)

        q = split(linear(x, w, p + "attention.self.query"))
        k = split(linear(x, w, p + "attention.self.key"))
        v = split(linear(x, w, p + "attention.self.value"))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(head_dim)
        scores = scores - scores.max(axis=-1, keepdims=True)
        probs = np.exp(scores)
        probs = probs / probs.sum(axis=-1, keepdims=True)
        context = (probs @ v).transpose(1, 0, 2).reshape(n, hidden)
        attn = linear(context, w, p + "attention.output.dense") + x
        attn = layer_norm(
            attn,
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
            eps,
        )
        inter = gelu(linear(attn, w, p + "intermediate.dense"))
        out = linear(inter, w, p + "output.dense") + attn
        x = layer_norm(out, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
    pooled = x.mean(axis=0)
    return pooled / np.linalg.norm(pooled)


def main():
    model_dir = sys.argv[1]
    with open(model_dir + "/config.json") as f:
        config = json.load(f)
    with open(model_dir + "/tokenizer.json") as f:
        vocab = json.load(f)["model"]["vocab"]
    with open(model_dir + "/model.safetensors", "rb") as f:
        weights_sha256 = hashlib.sha256(f.read()).hexdigest()
    weights = read_safetensors(model_dir + "/model.safetensors")
    cases = []
    for name, text in CASES:
        ids, full = tokenize(text, vocab)
        vector = embed(np.array(ids), weights, config)
        cases.append(
            {
                "name": name,
                "text": text,
                "token_ids": ids,
                "untruncated_tokens": full,
                "vector": [float("%.9g" % x) for x in vector],
            }
        )
    out = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "weights_sha256": weights_sha256,
        "max_tokens": MAX_TOKENS,
        "numpy": np.__version__,
        "python": sys.version.split()[0],
        "cases": cases,
    }
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
