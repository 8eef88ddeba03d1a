"""tensorflow/models, official/nlp BERT pretraining input, feeding a small BERT-style Keras model.

Source: github.com/tensorflow/models, `official/nlp/data/pretrain_dataloader.py`
(`BertPretrainDataLoader._name_to_features`, `_decode`: parse a serialized tf.Example of int64
features and cast every int64 to int32 ("tf.Example only supports tf.int64, but the TPU only
supports tf.int32"); `_parse`: rename
to the model's inputs) read by `official/core/input_reader.py` (`InputReader.read`:
`_shard_files_then_read` = file list shuffled and repeated, `interleave(TFRecordDataset,
num_parallel_calls=AUTOTUNE)`; `shuffle`, decoder map and parser map with
`num_parallel_calls=AUTOTUNE`, `batch(drop_remainder=True)`, `prefetch(AUTOTUNE)`). The model is a
BERT encoder with the masked-LM and next-sentence heads and losses of
`official/nlp/tasks/masked_lm.py` (sparse cross-entropy over the masked positions, weighted by
`masked_lm_weights`, plus the next-sentence loss).

Changed to run here: 4 local TFRecord shards of 512 tf.train.Examples each with the source's
feature names (`input_ids`, `input_mask`, `segment_ids` [seq_length], `masked_lm_positions`,
`masked_lm_ids`, `masked_lm_weights` [max_predictions_per_seq], `next_sentence_labels` [1]),
random token ids from a fixed seed; seq_length 128 and max_predictions_per_seq 20 (the config's
defaults are 512 and 76, the BERT-base phase-1 recipe uses 128 and 20); a 2-layer, 128-wide
encoder with a 4,096-token vocabulary (BERT-base: 12 layers, 768 wide, 30,522 tokens) and batch 16
(the config: 512), written with Keras layers instead of `official.nlp.modeling`; the loss is the model's `compute_loss`.
Shuffle buffer 1000.

Expected answer and why (from plain-TensorFlow measurements: see MEASURED below):
- bottleneck `compute`: the pipeline alone is many times faster than the step with a constant
  batch; parsing fixed-length int64 features and a cast is cheap next to a transformer step.
- stage: none — no stage of the pipeline is at fault.
- right: none required (on a GPU, `mixed_precision` or `xla` would speed the step).
- wrong: every input-side fix.

MEASURED (plain TensorFlow/Keras, 2026-12-01, the shared 2-core machine: a throwaway script times
`train_on_batch` on one constant batch (free step), fed by `make_dataset`, `make_dataset` alone,
`expert_dataset` alone and fed; 3 warm-up batches, then 3 s each, two repeats back to back. Run
WITHOUT the CPU lock (its queue held five other jobs), so other sessions' work ran beside it: the
margins below are far wider than the spread between repeats.)
batch 16: free step 3.6 / 4.2 steps/s; fed 6.8 / 3.1; pipeline alone 299 / 549 batches/s (>70x the free
step).
"""

import os
import sys

import keras
import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import INPUT_FIXES, Expected, data_dir  # noqa: E402

EXPECTED = Expected(
    bottleneck="compute",
    stage=None,
    right_fixes=(),
    wrong_fixes=INPUT_FIXES,
)

SHARDS, PER_SHARD = 4, 512
SEQ_LENGTH, MAX_PREDICTIONS, VOCAB, HIDDEN, LAYERS, HEADS = 128, 20, 4096, 128, 2, 4
SHUFFLE_BUFFER, SEED = 1000, 3


def _int64(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def _write(folder):
    rng = np.random.default_rng(31)
    for shard in range(SHARDS):
        with tf.io.TFRecordWriter(os.path.join(folder, f"pretrain-{shard:05d}.tfrecord")) as writer:
            for _ in range(PER_SHARD):
                length = int(rng.integers(SEQ_LENGTH // 2, SEQ_LENGTH + 1))
                ids = np.zeros(SEQ_LENGTH, np.int64)
                ids[:length] = rng.integers(5, VOCAB, length)
                mask = (np.arange(SEQ_LENGTH) < length).astype(np.int64)
                segments = (np.arange(SEQ_LENGTH) >= length // 2).astype(np.int64) * mask
                count = min(MAX_PREDICTIONS, max(1, int(length * 0.15)))
                positions = np.zeros(MAX_PREDICTIONS, np.int64)
                positions[:count] = np.sort(rng.choice(np.arange(1, length), count, replace=False))
                masked_ids = np.where(np.arange(MAX_PREDICTIONS) < count, ids[positions], 0)
                weights = (np.arange(MAX_PREDICTIONS) < count).astype(np.float32)
                example = tf.train.Example(features=tf.train.Features(feature={
                    "input_ids": _int64(ids), "input_mask": _int64(mask), "segment_ids": _int64(segments),
                    "masked_lm_positions": _int64(positions), "masked_lm_ids": _int64(masked_ids),
                    "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(value=weights)),
                    "next_sentence_labels": _int64([int(rng.integers(0, 2))]),
                }))
                writer.write(example.SerializeToString())


def _files():
    folder = data_dir("real-models_nlp_bert_pretrain-v1", _write)
    return sorted(tf.io.gfile.glob(os.path.join(folder, "pretrain-*")))


# -- official/nlp/data/pretrain_dataloader.py: BertPretrainDataLoader ----------------------------
def _name_to_features():
    return {
        "input_mask": tf.io.FixedLenFeature([SEQ_LENGTH], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature([MAX_PREDICTIONS], tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature([MAX_PREDICTIONS], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([MAX_PREDICTIONS], tf.float32),
        "input_ids": tf.io.FixedLenFeature([SEQ_LENGTH], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([SEQ_LENGTH], tf.int64),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }


def decode(record):
    """Decodes a serialized tf.Example."""
    example = tf.io.parse_single_example(record, _name_to_features())
    # tf.Example only supports tf.int64, but the TPU only supports tf.int32.
    # So cast all int64 to int32.
    for name in list(example.keys()):
        t = example[name]
        if t.dtype == tf.int64:
            t = tf.cast(t, tf.int32)
        example[name] = t
    return example


def parse(record):
    """Parses raw tensors into a dict of tensors to be consumed by the model."""
    return {
        "input_mask": record["input_mask"],
        "masked_lm_positions": record["masked_lm_positions"],
        "masked_lm_ids": record["masked_lm_ids"],
        "masked_lm_weights": record["masked_lm_weights"],
        "input_word_ids": record["input_ids"],
        "input_type_ids": record["segment_ids"],
        "next_sentence_labels": record["next_sentence_labels"],
    }


# -- official/core/input_reader.py: InputReader.read (is_training=True, no cache, one host) -----
def make_dataset(batch_size=16):
    files = _files()
    dataset = tf.data.Dataset.from_tensor_slices(files)
    dataset = dataset.shuffle(len(files), seed=SEED, reshuffle_each_iteration=True)
    dataset = dataset.repeat()
    dataset = dataset.interleave(map_func=tf.data.TFRecordDataset, cycle_length=None, block_length=None,
                                 num_parallel_calls=tf.data.AUTOTUNE, deterministic=None)
    dataset = dataset.shuffle(SHUFFLE_BUFFER, seed=SEED)
    dataset = dataset.map(decode, num_parallel_calls=tf.data.AUTOTUNE)
    dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    dataset = dataset.batch(batch_size, drop_remainder=True)
    return dataset.prefetch(tf.data.AUTOTUNE)


def expert_dataset(batch_size=16):
    return make_dataset(batch_size)  # already the source's fast form: parallel reads and maps, prefetch


class BertPretrainer(keras.Model):
    """Encoder + masked-LM and next-sentence heads; the losses of official/nlp/tasks/masked_lm.py."""

    def __init__(self):
        super().__init__(name="bert_pretrainer")
        self.word_embeddings = keras.layers.Embedding(VOCAB, HIDDEN)
        self.type_embeddings = keras.layers.Embedding(2, HIDDEN)
        self.position_embeddings = keras.layers.Embedding(SEQ_LENGTH, HIDDEN)
        self.embedding_norm = keras.layers.LayerNormalization(epsilon=1e-12)
        self.attention = [keras.layers.MultiHeadAttention(HEADS, HIDDEN // HEADS) for _ in range(LAYERS)]
        self.attention_norm = [keras.layers.LayerNormalization(epsilon=1e-12) for _ in range(LAYERS)]
        self.inner = [keras.layers.Dense(4 * HIDDEN, activation="gelu") for _ in range(LAYERS)]
        self.outer = [keras.layers.Dense(HIDDEN) for _ in range(LAYERS)]
        self.output_norm = [keras.layers.LayerNormalization(epsilon=1e-12) for _ in range(LAYERS)]
        self.lm_transform = keras.layers.Dense(HIDDEN, activation="gelu")
        self.lm_norm = keras.layers.LayerNormalization(epsilon=1e-12)
        self.pooler = keras.layers.Dense(HIDDEN, activation="tanh")
        self.nsp = keras.layers.Dense(2)

    def call(self, inputs, training=False):
        ids, types, mask = inputs["input_word_ids"], inputs["input_type_ids"], inputs["input_mask"]
        positions = tf.range(tf.shape(ids)[1])[tf.newaxis, :]
        x = self.word_embeddings(ids) + self.type_embeddings(types) + self.position_embeddings(positions)
        x = self.embedding_norm(x)
        attention_mask = tf.cast(mask[:, tf.newaxis, :], tf.bool)
        for i in range(LAYERS):
            x = self.attention_norm[i](x + self.attention[i](x, x, attention_mask=attention_mask, training=training))
            x = self.output_norm[i](x + self.outer[i](self.inner[i](x)))
        picked = tf.gather(x, inputs["masked_lm_positions"], batch_dims=1)
        picked = self.lm_norm(self.lm_transform(picked))
        lm_logits = tf.matmul(picked, self.word_embeddings.embeddings, transpose_b=True)
        return {"mlm_logits": lm_logits, "next_sentence": self.nsp(self.pooler(x[:, 0]))}

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        lm_loss = keras.losses.sparse_categorical_crossentropy(x["masked_lm_ids"], y_pred["mlm_logits"], from_logits=True)
        weights = x["masked_lm_weights"]
        lm_loss = tf.math.divide_no_nan(tf.reduce_sum(lm_loss * weights), tf.reduce_sum(weights))
        nsp_loss = keras.losses.sparse_categorical_crossentropy(x["next_sentence_labels"], y_pred["next_sentence"],
                                                                from_logits=True)
        return lm_loss + tf.reduce_mean(nsp_loss)


def make_model():
    model = BertPretrainer()
    model.compile(optimizer=keras.optimizers.AdamW(1e-4))
    return model
