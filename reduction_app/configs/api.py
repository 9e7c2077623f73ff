"""Config profiles over HTTP: list, create, read, update (a new version), delete."""

from typing import Any

from ninja import Router, Status
from ninja.pagination import paginate

from reduction_app.configs import services
from reduction_app.configs.schemas import ConfigIn, ConfigOut, ConfigUpdateIn
from reduction_app.configs.selectors import config_get, config_list
from reduction_app.cursors import LIST_ERRORS, PAGE, IdCursorPagination
from reduction_app.http import ApiRequest, api_workspace
from reduction_app.models import ConfigProfile
from reduction_app.schemas import (
    BODY_ERRORS,
    PARAM_ERRORS,
    ApiError,
    ErrorOut,
    response_links,
)

router = Router()


def _config_or_404(request: ApiRequest, config_id: int) -> ConfigProfile:
    profile = config_get(workspace=api_workspace(request), profile_id=config_id)
    if profile is None:
        raise ApiError(404, f"config {config_id} not found", "config_id")
    return profile


@router.get(
    "/configs",
    response={200: list[ConfigOut], **LIST_ERRORS},
    tags=["configs"],
    url_name="config_list",
)
@paginate(IdCursorPagination, **PAGE)
def list_configs(request: ApiRequest) -> Any:
    return config_list(workspace=api_workspace(request)).prefetch_related("versions")


@router.post(
    "/configs",
    response={201: ConfigOut, **BODY_ERRORS, 409: ErrorOut},
    openapi_extra=response_links(
        (201,),
        "config_id",
        "id",
        (
            "reduction_app_api_records_get_config",
            "reduction_app_api_records_update_config",
            "reduction_app_api_records_delete_config",
        ),
    ),
    tags=["configs"],
    url_name="config_create",
)
def create_config(request: ApiRequest, payload: ConfigIn) -> Status[ConfigProfile]:
    version = services.config_create(
        workspace=api_workspace(request), name=payload.name, data=payload.config
    )
    return Status(201, version.profile)


@router.get(
    "/configs/{config_id}",
    response={200: ConfigOut, **PARAM_ERRORS, 404: ErrorOut},
    tags=["configs"],
    url_name="config_detail",
)
def get_config(request: ApiRequest, config_id: int) -> Status[ConfigProfile]:
    profile = _config_or_404(request, config_id)
    return Status(200, profile)


@router.put(
    "/configs/{config_id}",
    response={200: ConfigOut, **BODY_ERRORS, 404: ErrorOut, 409: ErrorOut},
    tags=["configs"],
    url_name="config_update",
)
def update_config(
    request: ApiRequest, config_id: int, payload: ConfigUpdateIn
) -> Status[ConfigProfile]:
    """Save a new version; events recorded with earlier versions keep pointing at them."""
    profile = _config_or_404(request, config_id)
    version = services.config_update(profile=profile, data=payload.config, name=payload.name)
    return Status(200, version.profile)


@router.delete(
    "/configs/{config_id}",
    response={204: None, **PARAM_ERRORS, 404: ErrorOut},
    tags=["configs"],
    url_name="config_delete",
)
def delete_config(request: ApiRequest, config_id: int) -> Status[None]:
    services.config_delete(profile=_config_or_404(request, config_id))
    return Status(204, None)
