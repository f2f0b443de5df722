/**
 * Tenants ({@code tenant} on a pipeline): each event's tenant is read from a body field, a header
 * or a claim of the caller's JWT, goes into the key ({@link dev.idem.server.tenant.TenantKeys}),
 * and names the scope the key is kept in ({@link dev.idem.server.tenant.TenantScopedStore}), so the
 * same key in two tenants never collides and clearing one tenant is a scope clear that touches no
 * other tenant.
 */
@NullMarked
package dev.idem.server.tenant;

import org.jspecify.annotations.NullMarked;
