package dev.idem.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.util.HexFormat;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class Sha256WordsTest {
  @Test
  void wordReadsEightBytesBigEndianAtAnyOffset() {
    // Given random bytes
    SplittableRandom random = new SplittableRandom(12);
    byte[] bytes = new byte[64];
    for (int round = 0; round < 1_000; round++) {
      random.nextBytes(bytes);
      int offset = random.nextInt(bytes.length - 7);

      // When one word is read, then it is the bytes' big-endian value
      assertThat(Sha256Words.word(bytes, offset))
          .isEqualTo(ByteBuffer.wrap(bytes, offset, 8).getLong());
    }
  }

  @Test
  void bytesAreTheWordsInOrderAndReadBack() {
    SplittableRandom random = new SplittableRandom(13);
    for (int round = 0; round < 1_000; round++) {
      // Given four random words
      long w0 = random.nextLong();
      long w1 = random.nextLong();
      long w2 = random.nextLong();
      long w3 = random.nextLong();

      // When they are written out
      byte[] bytes = Sha256Words.bytes(w0, w1, w2, w3);

      // Then they are 32 big-endian bytes, word by word, and read back the same
      assertThat(bytes)
          .isEqualTo(
              ByteBuffer.allocate(32).putLong(w0).putLong(w1).putLong(w2).putLong(w3).array());
      assertThat(Sha256Words.word(bytes, 0)).isEqualTo(w0);
      assertThat(Sha256Words.word(bytes, 8)).isEqualTo(w1);
      assertThat(Sha256Words.word(bytes, 16)).isEqualTo(w2);
      assertThat(Sha256Words.word(bytes, 24)).isEqualTo(w3);
      assertThat(Sha256Words.hex(w0, w1, w2, w3)).isEqualTo(HexFormat.of().formatHex(bytes));
    }
  }

  @Test
  void aWordPastTheEndIsRefused() {
    assertThatThrownBy(() -> Sha256Words.word(new byte[32], 25))
        .isInstanceOf(IndexOutOfBoundsException.class);
  }
}
