/** `GET /_admin/v1/openapi.json`: the OpenAPI 3.1 document of control's listener, behind the admin token like the rest. */
import { renderDocument } from '../../protocol/openapi';
import type { Router } from '../http/router';

export function registerOpenApiRoute(router: Router): void {
  router.get('/_admin/v1/openapi.json', ({ res }) => {
    const body = renderDocument('admin');
    res.writeHead(200, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(body)),
      'cache-control': 'no-store',
    });
    res.end(body);
  });
}
