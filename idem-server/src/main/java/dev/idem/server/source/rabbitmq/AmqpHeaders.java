package dev.idem.server.source.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.LongString;
import dev.idem.server.config.RabbitMqSourceSettings;
import java.nio.charset.StandardCharsets;
import java.util.Date;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The header lookup of an AMQP message, as key rules read it ({@code header("X")}): the message's
 * header table by case-insensitive name, plus {@code amqp-message-id} for the {@code message_id}
 * property. Text values are read as UTF-8 (long strings and byte arrays), numbers, booleans and
 * decimals as their text, timestamps as epoch seconds; nested tables and arrays are not readable
 * (null).
 */
final class AmqpHeaders implements Function<String, @Nullable String> {
  private final @Nullable String messageId;
  private final Map<String, Object> table;

  private AmqpHeaders(@Nullable String messageId, Map<String, Object> table) {
    this.messageId = messageId;
    this.table = table;
  }

  /**
   * Returns the lookup of a message's properties.
   *
   * @param props the message's properties, or null
   * @return the lookup
   */
  static AmqpHeaders of(AMQP.@Nullable BasicProperties props) {
    Map<String, Object> table = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
    if (props != null && props.getHeaders() != null) {
      for (Map.Entry<String, Object> e : props.getHeaders().entrySet()) {
        if (e.getKey() != null && e.getValue() != null) {
          table.put(e.getKey(), e.getValue());
        }
      }
    }
    return new AmqpHeaders(props == null ? null : props.getMessageId(), table);
  }

  @Override
  public @Nullable String apply(String name) {
    if (name.toLowerCase(Locale.ROOT).equals(RabbitMqSourceSettings.MESSAGE_ID_HEADER)) {
      return messageId;
    }
    return text(table.get(name));
  }

  /** The message_id property, or null. */
  @Nullable String messageId() {
    return messageId;
  }

  /** A header's value as a number (e.g. {@code x-delivery-count}), or -1. */
  long number(String name) {
    Object v = table.get(name);
    return v instanceof Number n ? n.longValue() : -1;
  }

  /**
   * Returns a header table value as text.
   *
   * @param value the value
   * @return its text, or null if absent or not a scalar
   */
  static @Nullable String text(@Nullable Object value) {
    if (value == null) {
      return null;
    }
    if (value instanceof LongString s) {
      return new String(s.getBytes(), StandardCharsets.UTF_8);
    }
    if (value instanceof byte[] b) {
      return new String(b, StandardCharsets.UTF_8);
    }
    if (value instanceof String
        || value instanceof Number
        || value instanceof Boolean
        || value instanceof Character) {
      return value.toString();
    }
    if (value instanceof Date d) {
      return Long.toString(d.getTime() / 1000);
    }
    return null;
  }
}
