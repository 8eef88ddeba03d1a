"""keras-io speaker recognition with a 1-D CNN over FFTs: WAV decode, noise, FFT (compute-bound).

Source: github.com/keras-team/keras-io, `examples/audio/speaker_recognition_using_cnn.py`
(`paths_and_labels_to_dataset`, `path_to_audio`, `add_noise`, `audio_to_fft`, the pipeline
`shuffle(BATCH_SIZE * 8, seed=SHUFFLE_SEED).batch(BATCH_SIZE)`, then `map(add_noise)` and
`map(audio_to_fft)` with `num_parallel_calls=AUTOTUNE`, `prefetch(AUTOTUNE)`; `residual_block`,
`build_model`, compiled with Adam and sparse categorical cross-entropy). The functions and the
order of ops are the source's; `noises` is built as the source builds it (1-second slices of the
noise recordings, `load_noise_sample`).

Changed to run here: 5 local "speakers" of 48 one-second 16 kHz mono WAV files each (harmonic tones
with a per-speaker pitch, plus noise, from a fixed seed; written with `tf.audio.encode_wav`) and 3
ten-second noise WAVs, instead of the Kaggle speaker set; BATCH_SIZE 16 (source: 128) and the residual
blocks' filters halved (8/16/32/64/64; source: 16/32/64/128/128) to keep a step near a few hundred
milliseconds on 2 cores (the source's model at batch 32 took ~3 s a step here); otherwise the
model is the source's (input 8000 x 1, 5 residual blocks, the same dense head);
`.repeat()` at the end stands for the source's epochs; the train/validation split is kept (10%).

Expected answer and why (from plain-TensorFlow measurements: see MEASURED below):
- bottleneck `compute`: the pipeline alone gives batches many times faster than the model steps
  with a constant batch (decoding a WAV is a copy; an FFT of 32 x 16000 samples is milliseconds),
  while the residual 1-D CNN over 8,000 frequency bins costs hundreds of milliseconds on 2 cores.
- stage: none — no stage of the pipeline is at fault.
- right: none required (on a GPU, `mixed_precision` or `xla` would speed the step).
- wrong: every input-side fix: the pipeline is not what limits training.

MEASURED (plain TensorFlow/Keras, 2026-12-01, the shared 2-core machine: a throwaway script times
`train_on_batch` on one constant batch (free step), fed by `make_dataset`, `make_dataset` alone,
`expert_dataset` alone and fed; 3 warm-up batches, then 3 s each, two repeats back to back. Run
WITHOUT the CPU lock (its queue held five other jobs), so other sessions' work ran beside it: the
margins below are far wider than the spread between repeats.)
batch 16: free step 4.8 / 6.8 steps/s; fed 1.6 / 5.6; pipeline alone 125 / 57 batches/s (8.5-26x the free
step). The low first fed figure is a one-time cost, not the input: 216 training clips make 13
batches of 16 and a last one of 8 each epoch (the source batches without `drop_remainder`), and
Keras traces its train function again, once, for that shape. Alternating 4-s runs in one process
after it: free 7.9 / 3.8 / 2.7 / 4.2 steps/s, fed 0.9 (the retrace) / 4.6 / 4.0 / 4.7, alone
87 / 41 / 49 / 74 batches/s.
"""

import os
import sys
from pathlib import Path

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

SPEAKERS, CLIPS, NOISE_FILES = 5, 48, 3
VALID_SPLIT = 0.1
SHUFFLE_SEED = 43
SAMPLING_RATE = 16000
SCALE = 0.5
BATCH_SIZE = 16
FILTER_DIVISOR = 2  # the source's filters (16, 32, 64, 128, 128) halved for 2 CPU cores


def _write(folder):
    rng = np.random.default_rng(41)
    t = np.arange(SAMPLING_RATE) / SAMPLING_RATE
    audio_root = Path(folder) / "audio"
    for s in range(SPEAKERS):
        (audio_root / f"speaker_{s}").mkdir(parents=True)
        pitch = 110.0 + 40.0 * s
        for c in range(CLIPS):
            wave = sum(np.sin(2 * np.pi * pitch * k * (1 + rng.normal(0, 0.01)) * t) / k for k in range(1, 5))
            wave = 0.3 * wave * np.abs(np.sin(2 * np.pi * rng.uniform(1, 4) * t)) + rng.normal(0, 0.02, t.shape)
            data = tf.audio.encode_wav(np.clip(wave, -1, 1).astype(np.float32)[:, None], SAMPLING_RATE)
            tf.io.write_file(str(audio_root / f"speaker_{s}" / f"{c}.wav"), data)
    noise_root = Path(folder) / "noise" / "background"
    noise_root.mkdir(parents=True)
    for n in range(NOISE_FILES):
        noise = rng.normal(0, 0.2, 10 * SAMPLING_RATE).astype(np.float32)
        tf.io.write_file(str(noise_root / f"noise_{n}.wav"), tf.audio.encode_wav(noise[:, None], SAMPLING_RATE))


def _folders():
    folder = data_dir("real-kerasio_audio-v1", _write)
    return os.path.join(folder, "audio"), os.path.join(folder, "noise")


def load_noise_sample(path):
    sample, sampling_rate = tf.audio.decode_wav(tf.io.read_file(path), desired_channels=1)
    if sampling_rate == SAMPLING_RATE:
        # Number of slices of 16000 each that can be generated from the noise sample
        slices = int(sample.shape[0] / SAMPLING_RATE)
        sample = tf.split(sample[: slices * SAMPLING_RATE], slices)
        return sample
    return None


def _noises(noise_path):
    noise_paths = []
    for subdir in sorted(os.listdir(noise_path)):
        subdir_path = Path(noise_path) / subdir
        if os.path.isdir(subdir_path):
            noise_paths += [os.path.join(subdir_path, f) for f in sorted(os.listdir(subdir_path)) if f.endswith(".wav")]
    noises = []
    for path in noise_paths:
        sample = load_noise_sample(path)
        if sample:
            noises.extend(sample)
    return tf.stack(noises)


def paths_and_labels_to_dataset(audio_paths, labels):
    """Constructs a dataset of audios and labels."""
    path_ds = tf.data.Dataset.from_tensor_slices(audio_paths)
    audio_ds = path_ds.map(lambda x: path_to_audio(x))
    label_ds = tf.data.Dataset.from_tensor_slices(labels)
    return tf.data.Dataset.zip((audio_ds, label_ds))


def path_to_audio(path):
    """Reads and decodes an audio file."""
    audio = tf.io.read_file(path)
    audio, _ = tf.audio.decode_wav(audio, 1, SAMPLING_RATE)
    return audio


def add_noise(audio, noises=None, scale=0.5):
    if noises is not None:
        # Create a random tensor of the same size as audio ranging from
        # 0 to the number of noise stream samples that we have.
        tf_rnd = tf.random.uniform((tf.shape(audio)[0],), 0, noises.shape[0], dtype=tf.int32)
        noise = tf.gather(noises, tf_rnd, axis=0)
        # Get the amplitude proportion between the audio and the noise
        prop = tf.math.reduce_max(audio, axis=1) / tf.math.reduce_max(noise, axis=1)
        prop = tf.repeat(tf.expand_dims(prop, axis=1), tf.shape(audio)[1], axis=1)
        # Adding the rescaled noise to audio
        audio = audio + noise * prop * scale
    return audio


def audio_to_fft(audio):
    # Since tf.signal.fft applies FFT on the innermost dimension,
    # we need to squeeze the dimensions and then expand them again
    # after FFT
    audio = tf.squeeze(audio, axis=-1)
    fft = tf.signal.fft(tf.cast(tf.complex(real=audio, imag=tf.zeros_like(audio)), tf.complex64))
    fft = tf.expand_dims(fft, axis=-1)
    # Return the absolute value of the first half of the FFT
    # which represents the positive frequencies
    return tf.math.abs(fft[:, : (audio.shape[1] // 2), :])


def _train_paths_and_labels():
    audio_path, _ = _folders()
    class_names = sorted(os.listdir(audio_path))
    audio_paths, labels = [], []
    for label, name in enumerate(class_names):
        dir_path = Path(audio_path) / name
        speaker_sample_paths = [os.path.join(dir_path, f) for f in sorted(os.listdir(dir_path)) if f.endswith(".wav")]
        audio_paths += speaker_sample_paths
        labels += [label] * len(speaker_sample_paths)
    # Shuffle
    rng = np.random.RandomState(SHUFFLE_SEED)
    rng.shuffle(audio_paths)
    rng = np.random.RandomState(SHUFFLE_SEED)
    rng.shuffle(labels)
    num_val_samples = int(VALID_SPLIT * len(audio_paths))
    return audio_paths[:-num_val_samples], labels[:-num_val_samples]


def make_dataset(batch_size=BATCH_SIZE):
    train_audio_paths, train_labels = _train_paths_and_labels()
    noises = _noises(_folders()[1])
    train_ds = paths_and_labels_to_dataset(train_audio_paths, train_labels)
    train_ds = train_ds.shuffle(buffer_size=batch_size * 8, seed=SHUFFLE_SEED).batch(batch_size)
    # Add noise to the training set
    train_ds = train_ds.map(lambda x, y: (add_noise(x, noises, scale=SCALE), y), num_parallel_calls=tf.data.AUTOTUNE)
    # Transform audio wave to the frequency domain using `audio_to_fft`
    train_ds = train_ds.map(lambda x, y: (audio_to_fft(x), y), num_parallel_calls=tf.data.AUTOTUNE)
    train_ds = train_ds.prefetch(tf.data.AUTOTUNE)
    return train_ds.repeat()


def expert_dataset(batch_size=BATCH_SIZE):
    return make_dataset(batch_size)  # nothing to change: the input is not the limit


def residual_block(x, filters, conv_num=3, activation="relu"):
    # Shortcut
    s = keras.layers.Conv1D(filters, 1, padding="same")(x)
    for i in range(conv_num - 1):
        x = keras.layers.Conv1D(filters, 3, padding="same")(x)
        x = keras.layers.Activation(activation)(x)
    x = keras.layers.Conv1D(filters, 3, padding="same")(x)
    x = keras.layers.Add()([x, s])
    x = keras.layers.Activation(activation)(x)
    return keras.layers.MaxPool1D(pool_size=2, strides=2)(x)


def build_model(input_shape, num_classes):
    inputs = keras.layers.Input(shape=input_shape, name="input")
    x = residual_block(inputs, 16 // FILTER_DIVISOR, 2)
    x = residual_block(x, 32 // FILTER_DIVISOR, 2)
    x = residual_block(x, 64 // FILTER_DIVISOR, 3)
    x = residual_block(x, 128 // FILTER_DIVISOR, 3)
    x = residual_block(x, 128 // FILTER_DIVISOR, 3)
    x = keras.layers.AveragePooling1D(pool_size=3, strides=3)(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(256, activation="relu")(x)
    x = keras.layers.Dense(128, activation="relu")(x)
    outputs = keras.layers.Dense(num_classes, activation="softmax", name="output")(x)
    return keras.models.Model(inputs=inputs, outputs=outputs)


def make_model():
    model = build_model((SAMPLING_RATE // 2, 1), SPEAKERS)
    model.compile(optimizer="Adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model
