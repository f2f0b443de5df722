package dev.idem.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

class BodyBufferTest {
  @Test
  void aLargeDeclaredLengthIsNotAllocatedBeforeTheBytesArrive() {
    BodyBuffer b = new BodyBuffer(64L << 20, 64L << 20);

    assertThat(b.append(ByteBuffer.wrap(new byte[] {'{'}))).isTrue();

    assertThat(b.capacity()).isLessThanOrEqualTo(BodyBuffer.INITIAL_CAPACITY);
    assertThat(b.size()).isEqualTo(1);
  }

  @Test
  void theBufferGrowsWithTheBytesAndNeverPastTheDeclaredLength() {
    BodyBuffer b = new BodyBuffer(10_000, 1 << 20);
    byte[] chunk = new byte[3000];

    b.append(ByteBuffer.wrap(chunk));
    b.append(ByteBuffer.wrap(chunk));
    assertThat(b.capacity()).isBetween(6000, 10_000);
    b.append(ByteBuffer.wrap(chunk));
    b.append(ByteBuffer.wrap(new byte[1000]));

    assertThat(b.capacity()).isEqualTo(10_000);
    assertThat(b.toByteArray()).hasSize(10_000);
  }

  @Test
  void aBodyPastTheLimitIsRefusedWithoutBeingCopied() {
    BodyBuffer b = new BodyBuffer(-1, 100);

    assertThat(b.append(ByteBuffer.wrap(new byte[60]))).isTrue();
    assertThat(b.append(ByteBuffer.wrap(new byte[60]))).isFalse();

    assertThat(b.size()).isEqualTo(60);
    assertThat(b.capacity()).isLessThanOrEqualTo(100);
  }
}
