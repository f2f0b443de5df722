package dev.idem.key;

import dev.idem.DedupKey;
import dev.idem.IdemConfigException;
import dev.idem.KeyDerivationException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * How an event gets its {@link DedupKey}. A rule is fixed per dedup step ({@code dedup.key} in the
 * service's YAML); every rule hashes a list of typed {@link KeyPart}s with {@link KeyEncoding}:
 *
 * <table class="striped">
 *   <caption>Rules and the parts they hash</caption>
 *   <thead>
 *     <tr><th>rule</th><th>YAML</th><th>parts</th></tr>
 *   </thead>
 *   <tbody>
 *     <tr><td>{@link #of(Function)}</td><td>-</td><td>{@code [Text(value)]}, the same key as
 *         {@link KeyEncoding#ofString(String)}</td></tr>
 *     <tr><td>{@link #header(String)}</td><td>{@code header("X-Id")}</td><td>{@code
 *         [Header(value)]}</td></tr>
 *     <tr><td>{@link #field(String)}</td><td>{@code source.order.id}</td><td>{@code
 *         [Field(canonical JSON of the value)]}</td></tr>
 *     <tr><td>{@link #fields(List)}, {@link #parse(List)}</td><td>{@code [source.shop,
 *         header("X-Id")]}</td><td>one {@code Field} or {@code Header} part per entry, in
 *         order</td></tr>
 *     <tr><td>{@link #defaultKey()}</td><td>(omitted)</td><td>{@code [PrincipalChain(chain),
 *         Digest(CanonicalJson.sha256(body))]}</td></tr>
 *   </tbody>
 * </table>
 *
 * <p>Parts are typed by where their value came from, so rules of different kinds never collide: a
 * header whose value is {@code x}, a field whose value is {@code "x"} and a key function that
 * returns {@code x} give three different keys, and changing a step's rule from a header to a field
 * starts a new key space. Within one kind the value is the identity: {@code header("X-A")} and
 * {@code header("X-B")} give the same key for the same value. A field's value keeps its JSON type
 * and a number its exact value (see {@link FieldPath#extractJson(byte[])}): the number {@code 123},
 * the string {@code "123"} and the number {@code 123.5} are three keys, {@code 123} and {@code
 * 123.0} one; {@code true} and {@code "true"}, {@code {}} and {@code "{}"} are two each. Explicit
 * keys hold no caller identity: include it yourself where two callers must not dedupe each other.
 *
 * <p>An event the rule cannot key is a {@link KeyDerivationException} (a service answers {@code
 * 400}), never a key: a missing or blank value, a {@code null} field, a body that is not I-JSON.
 * The message says what to send or configure. The rules these factories return are immutable and
 * thread-safe (a function rule as far as its function is).
 */
@FunctionalInterface
public interface KeyRule {
  /**
   * Derives the event's key.
   *
   * @param event the event
   * @return the key
   * @throws KeyDerivationException if the event cannot be keyed by this rule
   */
  DedupKey derive(InboundEvent event);

  /**
   * Returns the key this rule gives an event whose key values are {@code values}, without the
   * event: for admin tools that look a key up by its raw value (an order id, a delivery id). A
   * field or header rule takes one text per entry, in order: a header's value, or the characters of
   * a field whose value is a JSON <em>string</em> (for a field holding a number or another JSON
   * type, use {@link #keyOfJson(String)}); a function rule takes the one text it would return.
   *
   * @param values the key's raw values, one per part
   * @return the key an event with these values gets
   * @throws KeyDerivationException if a value is blank or the count does not match the rule
   * @throws IdemConfigException if the rule has no raw values (the default key is a digest of the
   *     body: look it up by its hex digest instead)
   */
  default DedupKey keyOf(List<String> values) {
    throw new IdemConfigException(
        "the key rule "
            + this
            + " has no raw key values; look the key up by its 64-digit hex digest instead");
  }

  /**
   * Returns the key this rule gives an event whose key values are {@code values}, given with their
   * JSON types: a JSON array with one element per entry of a field or header rule, in order, each
   * the value as it is in the event: a field's value as the JSON it has in the body ({@code "A-1"}
   * with its quotes for a string, {@code 820982911946154508} for a number, which keeps its exact
   * value, also {@code true} or an object), a header's value as a JSON string. E.g. {@code
   * ["shop-1",42]} for {@code [source.shop, source.n]}.
   *
   * @param values a JSON array of the key's values
   * @return the key an event with these values gets
   * @throws KeyDerivationException if the text is not such an array, the count does not match the
   *     rule, a value is null or blank, or a header's value is not a string
   * @throws IdemConfigException if the rule has no raw values (a function rule or the default key)
   */
  default DedupKey keyOfJson(String values) {
    throw new IdemConfigException(
        "the key rule "
            + this
            + " has no JSON key values; look the key up by its 64-digit hex digest instead");
  }

  /**
   * Returns a rule that keys on a function of the event, used verbatim: every event for which it
   * returns the same text is a duplicate, whoever sent it.
   *
   * @param key returns the event's identity (e.g. an order id); null or blank is an error for that
   *     event
   * @return the rule
   */
  static KeyRule of(Function<? super InboundEvent, ? extends @Nullable String> key) {
    return new FunctionRule(key);
  }

  /**
   * Returns a rule that keys on a header, e.g. {@code X-Message-Id} or {@code Idempotency-Key}.
   *
   * @param name the header name (case-insensitive)
   * @return the rule
   * @throws IdemConfigException if the name is not a valid header name
   */
  static KeyRule header(String name) {
    return new SourceRule(List.of(new KeySource.Header(name)));
  }

  /**
   * Returns a rule that keys on one body field.
   *
   * @param path a {@link FieldPath}, e.g. {@code source.id} or {@code order.items[0].id}
   * @return the rule
   * @throws IdemConfigException if the path is not valid
   */
  static KeyRule field(String path) {
    return new SourceRule(List.of(new KeySource.Field(FieldPath.parse(path))));
  }

  /**
   * Returns a rule that keys on several body fields together (a composite key): each value is its
   * own typed, length-prefixed part, so {@code ("ab","c")} and {@code ("a","bc")} differ.
   *
   * @param paths the field paths, at least one, in order
   * @return the rule
   * @throws IdemConfigException if the list is empty or a path is not valid
   */
  static KeyRule fields(List<String> paths) {
    List<KeySource> sources = new ArrayList<>(paths.size());
    for (String path : paths) {
      sources.add(new KeySource.Field(FieldPath.parse(path)));
    }
    return SourceRule.of(sources);
  }

  /**
   * Returns the default key: the caller's principal chain (issuer and subject of the principal and
   * of each delegation actor, in order) plus SHA-256 of the body in canonical JSON ({@link
   * CanonicalJson}: RFC 8785, but numbers by their exact decimal value). Two bodies that differ
   * only in member order, whitespace, escapes or number spelling ({@code 1}, {@code 1.0}, {@code
   * 10E-1}) are duplicates; bodies that differ in a value or a value's JSON type ({@code 123} and
   * {@code "123"}, 820982911946154508 and 820982911946154509) are not; two callers, or two
   * delegates of one caller, sending the same body are not.
   *
   * <p>An absent or empty body, or one that is not I-JSON, is a {@link KeyDerivationException}
   * saying to give a key; a number outside the exact range is a {@link NumberOutOfRangeException}.
   * A JSON {@code null} body is keyable.
   *
   * @return the rule
   */
  static KeyRule defaultKey() {
    return DefaultKeyRule.INSTANCE;
  }

  /**
   * Reads one {@code dedup.key} entry: {@code header("X-Id")} (the name may be in double or single
   * quotes, or bare) or a {@link FieldPath} such as {@code source.id}.
   *
   * @param spec the entry
   * @return the rule
   * @throws IdemConfigException if the entry is blank or not valid, saying what is allowed
   */
  static KeyRule parse(String spec) {
    return new SourceRule(List.of(SourceRule.source(spec)));
  }

  /**
   * Reads a composite {@code dedup.key}: a list of {@link #parse(String)} entries, fields and
   * headers mixed, keyed together in order.
   *
   * @param specs the entries, at least one
   * @return the rule
   * @throws IdemConfigException if the list is empty or an entry is not valid
   */
  static KeyRule parse(List<String> specs) {
    List<KeySource> sources = new ArrayList<>(specs.size());
    for (String spec : specs) {
      sources.add(SourceRule.source(Objects.requireNonNull(spec, "spec")));
    }
    return SourceRule.of(sources);
  }
}
