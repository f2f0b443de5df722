package dev.idem.kafka;

import dev.idem.DedupKey;
import dev.idem.KeyDerivationException;
import dev.idem.key.KeyEncoding;
import dev.idem.key.KeyPart;
import java.nio.charset.StandardCharsets;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

/**
 * Ways to derive a record's dedup key. Pick by what a duplicate is in your system:
 *
 * <ul>
 *   <li>{@link #recordKey()}: the record's key (e.g. an order id), so a producer's resend with a
 *       new offset is a duplicate too;
 *   <li>{@link #header(String)}: a message-id header the producer sets;
 *   <li>{@link #coordinates()}: topic, partition and offset, so only a redelivery of the very same
 *       record (after a rebalance or a crash before the offset commit) is a duplicate.
 * </ul>
 *
 * A record without the chosen key is bad input: the function throws {@link KeyDerivationException}.
 */
public final class RecordKeys {
  private RecordKeys() {}

  /**
   * Keys by the record's key, as text ({@code String.valueOf}; a {@code byte[]} key as UTF-8).
   *
   * @param <K> the record key type
   * @param <V> the record value type
   * @return the key function
   */
  public static <K, V> Function<ConsumerRecord<K, V>, DedupKey> recordKey() {
    return record -> {
      Object key = record.key();
      if (key == null) {
        throw new KeyDerivationException(
            "record " + where(record) + " has no key; produce it with a key or key by a header");
      }
      String text =
          key instanceof byte[] bytes
              ? new String(bytes, StandardCharsets.UTF_8)
              : String.valueOf(key);
      return KeyEncoding.ofString(text);
    };
  }

  /**
   * Keys by the last value of a header, as UTF-8 text.
   *
   * @param name the header, e.g. {@code Message-Id}
   * @param <K> the record key type
   * @param <V> the record value type
   * @return the key function
   */
  public static <K, V> Function<ConsumerRecord<K, V>, DedupKey> header(String name) {
    return record -> {
      Header h = record.headers().lastHeader(name);
      if (h == null || h.value() == null) {
        throw new KeyDerivationException(
            "record " + where(record) + " has no header " + name + "; set it on every record");
      }
      return KeyEncoding.ofString(new String(h.value(), StandardCharsets.UTF_8));
    };
  }

  /**
   * Keys by topic, partition and offset: only redeliveries of the same record are duplicates.
   *
   * @param <K> the record key type
   * @param <V> the record value type
   * @return the key function
   */
  public static <K, V> Function<ConsumerRecord<K, V>, DedupKey> coordinates() {
    return record ->
        KeyEncoding.of(
            KeyPart.text(record.topic()),
            KeyPart.integer(record.partition()),
            KeyPart.integer(record.offset()));
  }

  static String where(ConsumerRecord<?, ?> record) {
    return record.topic() + "-" + record.partition() + "@" + record.offset();
  }
}
