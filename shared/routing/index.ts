export * from './routing.types';
export * from './routing-errors';
export * from './inline-model';
export * from './plan-route';
export * from './route-parameters';
export * from './endpoint-stats';
