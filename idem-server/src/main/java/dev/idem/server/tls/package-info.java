/**
 * TLS on the service's listener ({@code server.tls}): the certificate and key from PEM files or a
 * PKCS12 keystore, the CAs whose client certificates are verified (mutual TLS), and a watcher that
 * reloads them when the files change.
 */
@NullMarked
package dev.idem.server.tls;

import org.jspecify.annotations.NullMarked;
