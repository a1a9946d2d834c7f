/// <reference path="./interfaces/weir-endpoints-log.d.ts" />
/// <reference path="./interfaces/weir-endpoints-types.d.ts" />
/// <reference path="./interfaces/weir-hooks-policy.d.ts" />
declare module 'weir:hooks/hooks@0.2.0' {
  export type * as WeirEndpointsLog020 from 'weir:endpoints/log@0.2.0'; // import weir:endpoints/log@0.2.0
  export type * as WeirEndpointsTypes020 from 'weir:endpoints/types@0.2.0'; // import weir:endpoints/types@0.2.0
  export * as policy from 'weir:hooks/policy@0.2.0'; // export weir:hooks/policy@0.2.0
}
